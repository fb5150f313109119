"""The package's import graph, read from the source with ``ast`` (nothing is imported):
no module of veco_plugin reaches itself through its imports, and neither veco_plugin nor
benchmarks/ import the tests.

Every import statement counts, also one inside a function: deferring an import hides a
circle from the interpreter, not from a reader.
"""

import ast
import os
from typing import Dict, Iterator, List, Set, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = "veco_plugin"


def _modules(top: str) -> Dict[str, str]:
    """Dotted name -> path of every ``.py`` under REPO/``top``."""
    found = {}
    for directory, _, names in os.walk(os.path.join(REPO, top)):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                parts = os.path.relpath(path, REPO)[: -len(".py")].split(os.sep)
                found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported(module: str, path: str) -> Iterator[Tuple[str, str]]:
    """(module, name) of every name an import statement of ``path`` imports, relative
    modules resolved: ``from .x import y`` -> (``<package>.x``, ``y``); ``import a.b`` ->
    (``a.b``, "")."""
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((alias.name, "") for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1] + [base] * bool(base)
                base = ".".join(parts)
            yield from ((base, alias.name) for alias in node.names)


def _graph() -> Dict[str, Set[str]]:
    """Module -> the package's modules it imports: ``from x import y`` imports the module
    ``x.y`` when there is one, else ``x`` (``import a.b``: the module ``a.b``, or the
    package ``a``)."""
    modules = _modules(PACKAGE)
    graph: Dict[str, Set[str]] = {}
    for module, path in modules.items():
        edges = set()
        for base, name in _imported(module, path):
            target = f"{base}.{name}" if f"{base}.{name}" in modules else base
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != module:
                edges.add(target)
        graph[module] = edges
    return graph


def _cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """One cycle (``a -> b -> ... -> a``) per strongly connected component of more than
    one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    components: List[Set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_cycle_in(graph, component) for component in components]


def _cycle_in(graph: Dict[str, Set[str]], component: Set[str]) -> List[str]:
    """A shortest path from the component's first module back to itself."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        node = frontier.pop(0)
        for nxt in sorted(graph[node] & component):
            if nxt == start:
                return paths[node] + [start]
            if nxt not in paths:
                paths[nxt] = paths[node] + [nxt]
                frontier.append(nxt)
    raise AssertionError(f"no cycle through {start}")


def test_no_import_cycles():
    cycles = [" -> ".join(cycle) for cycle in _cycles(_graph())]
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_cycle_finder_names_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"d"}}
    assert _cycles(graph) == [["a", "b", "c", "a"]]


def test_package_and_benchmarks_do_not_import_the_tests():
    offenders = [
        f"{os.path.relpath(path, REPO)} imports {name}"
        for top in (PACKAGE, "benchmarks")
        for module, path in sorted(_modules(top).items())
        for name, _ in _imported(module, path)
        if name == "tests" or name.startswith("tests.")
    ]
    assert not offenders, "\n".join(offenders)
