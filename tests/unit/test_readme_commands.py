"""Every command line the docs show exists and names flags its program has (docs/README.md).

The bash blocks of README.md, docs/*.md and examples/*/README.md are read as a user copies
them (continuation lines joined, comments dropped, ``$(which X)`` as X). Each command must
exist: a console script of setup.py, a ``make`` target, a script or file the line runs
(``bash scripts/X.sh``, ``python benchmarks/X.py``, ``sbatch examples/...``). A console
script (in-process, its ``cli_main``; a subcommand's for ``veco-wmt14 prepare``) or a
``scripts/*.sh`` (run outside the project's venv, as a user types it) is asked for
``--help`` and each ``--flag`` of the line must be in that text; a ``fairseq-*`` line is
parsed in-process by fairseq's own parser (which adds the flags of the task, architecture,
criterion, optimizer and scheduler the line names), and must leave no flag unknown. Every
console script's ``--help`` ends with ``example: LINE``, LINE being the block under its
heading in docs/cli.md. (The blocks marked ``<!-- runs: toy -->`` are run by
tests/integration/test_doc_toy_blocks.py.)
"""

import contextlib
import functools
import importlib
import io
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest
from fairseq import options

from tests.helpers.runner import REPO, USER_DIR

READMES = [
    Path(REPO, "README.md"),
    *sorted(Path(REPO, "docs").glob("*.md")),
    *sorted(Path(REPO, "examples").glob("*/README.md")),
]
CLI_DOC = Path(REPO, "docs", "cli.md")
FAIRSEQ = {
    "fairseq-train": options.get_training_parser,
    "fairseq-preprocess": options.get_preprocessing_parser,
    "fairseq-generate": options.get_generation_parser,
    "fairseq-interactive": options.get_interactive_generation_parser,
}


@functools.lru_cache(maxsize=None)
def entry_points() -> Dict[str, str]:
    """console script -> its module (setup.py)."""
    text = Path(REPO, "setup.py").read_text()
    found = re.findall(r'"(veco-[a-z0-9-]+) = "?\s*"?([\w.]+):cli_main"', text)
    return dict(found)


def console_scripts() -> List[str]:
    return list(entry_points())


def make_targets() -> List[str]:
    return re.findall(r"^([\w-]+):", Path(REPO, "Makefile").read_text(), re.M)


def shell_lines() -> List[Tuple[str, str]]:
    """(where, line) of every line of the docs' bash blocks, as a user copies it."""
    found = []
    for readme in READMES:
        text = readme.read_text(encoding="utf-8")
        for block in re.findall(r"```bash\n(.*?)```", text, re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = re.sub(r"\$\(which ([\w-]+)\)", r"\1", line)
                for part in re.split(r"&&|\|\||;|\|", line):
                    if part.strip() and not part.strip().startswith("#"):
                        found.append((f"{readme.relative_to(REPO)}: {part.strip()[:60]}", part))
    return found


def commands() -> List[Tuple[str, str, List[str]]]:
    """(where, program, words) of every command of the READMEs' bash blocks."""
    found = []
    for where, part in shell_lines():
        program, args = _program(shlex.split(part, comments=True))
        if program:
            found.append((where, program, args))
    return found


def missing_command(words: List[str]) -> str:
    """What a command line runs that does not exist ('' when it all does, or is not ours)."""
    while words and re.match(r"^[A-Z_]+=", words[0]):  # VAR=value prefixes
        words = words[1:]
    if not words:
        return ""
    head, rest = words[0], words[1:]
    if head.startswith("veco-") and head not in console_scripts():
        return f"{head}: no such console script in setup.py"
    if head == "make":
        targets = [w for w in rest if not w.startswith("-") and "=" not in w]
        return " ".join(f"make {t}: no such target" for t in targets if t not in make_targets())
    paths = []  # the file the line runs: its first path argument, or the command itself
    if head in ("bash", "sh", "source", ".", "python", "python3", "sbatch"):
        paths = [w for w in rest if re.match(r"^(scripts|benchmarks|examples|tests)/", w)][:1]
    elif re.match(r"^(scripts|benchmarks)/", head):
        paths = [head]
    return " ".join(f"{p}: no such file" for p in paths if not Path(REPO, p).is_file())


def _program(words: List[str]) -> Tuple[str, List[str]]:
    """The program a command runs and its arguments ('' for others: make, export ...)."""
    while words and re.match(r"^[A-Z_]+=", words[0]):  # VAR=value prefixes
        words = words[1:]
    if not words:
        return "", []
    if words[0] == "bash" and len(words) > 1 and words[1].startswith("scripts/"):
        return words[1], words[2:]
    if words[0] == "torchrun":
        tail = [w for w in words if w.startswith("fairseq-")]
        return (tail[0], words[words.index(tail[0]) + 1 :]) if tail else ("torchrun", [])
    if words[0] in console_scripts() or words[0] in FAIRSEQ:
        return words[0], words[1:]
    return "", []


def flags(args: List[str]) -> List[str]:
    return [a.split("=", 1)[0] for a in args if re.match(r"^--[a-z]", a)]


@functools.lru_cache(maxsize=None)
def script_help(program: str, subcommand: str = "") -> str:
    """``program [subcommand] --help``: a console script in-process (its ``cli_main``), a
    script as a user runs it."""
    if program.startswith("scripts/"):
        argv = ["bash", str(Path(REPO, program)), "--help"]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        return proc.stdout + proc.stderr
    module = importlib.import_module(entry_points()[program])
    out = io.StringIO()
    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "1000"  # argparse wraps at hyphens too: one line a paragraph
    with contextlib.ExitStack() as stack:
        stack.callback(_restore, "COLUMNS", columns)
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(out))
        with pytest.raises(SystemExit):
            module.cli_main([subcommand, "--help"] if subcommand else ["--help"])
    return out.getvalue()


def _restore(name: str, value: Optional[str]) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def subcommand(program: str, args: List[str]) -> str:
    """The subcommand ``args`` name ('' for a program without any: ``veco-wmt14 prepare``)."""
    if program.startswith("scripts/") or not args or args[0].startswith("-"):
        return ""
    choices = re.search(r"\{([\w,-]+)\}", script_help(program).split("\n\n")[0])
    return args[0] if choices and args[0] in choices.group(1).split(",") else ""


def fairseq_unknown(program: str, args: List[str]) -> List[str]:
    """The flags of ``args`` that ``program``'s parser (with the task, architecture,
    criterion, optimizer and scheduler ``args`` name) does not know."""
    args = ["1" if "$" in a else a for a in args if a != "..."]  # placeholders
    args = [USER_DIR if a == "veco_plugin" else a for a in args]
    if program == "fairseq-train" and "--arch" not in args:  # elided ("..."): fairseq needs one
        args += ["--arch", "veco_base"]
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            if program == "fairseq-preprocess":  # a plain parser: no components
                _, extra = FAIRSEQ[program]().parse_known_args(args)
            else:
                parser = FAIRSEQ[program]()
                _, extra = options.parse_args_and_arch(parser, args, parse_known=True)
    except SystemExit:
        raise AssertionError(f"{program} {' '.join(args)}: {err.getvalue()}")
    return flags(extra)


def unknown(program: str, args: List[str]) -> List[str]:
    if program in FAIRSEQ:
        return fairseq_unknown(program, args)
    if "--" in args:  # what follows goes to the program the script calls
        args = args[: args.index("--")]
    text = script_help(program, subcommand(program, args))
    return [f for f in flags(args) if not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", text)]


ALL = commands()


def test_the_readmes_show_commands():
    programs = {program for _, program, _ in ALL}
    assert {"fairseq-train", "veco-align", "scripts/prepare-pretraining-data.sh"} <= programs


@pytest.mark.parametrize("where, program, args", ALL, ids=[w for w, _, _ in ALL])
def test_every_flag_shown_exists(where, program, args):
    missing = unknown(program, args)
    assert not missing, f"{program} has no {missing} ({where})"


LINES = shell_lines()


@pytest.mark.parametrize("where, line", LINES, ids=[w for w, _ in LINES])
def test_every_command_shown_exists(where, line):
    missing = missing_command(shlex.split(line, comments=True))
    assert not missing, f"{missing} ({where})"


def test_the_docs_show_every_console_script_and_make_target():
    programs = {program for _, program, _ in ALL}
    assert set(console_scripts()) <= programs, set(console_scripts()) - programs
    shown = " ".join(line for _, line in LINES)
    assert {"quickstart", "test"} <= set(re.findall(r"\bmake (\w+)", shown))


def _normalized(text: str) -> str:
    return " ".join(text.split())


def cli_examples() -> Dict[str, str]:
    """console script -> the example line under its heading in docs/cli.md."""
    text = CLI_DOC.read_text(encoding="utf-8")
    return dict(re.findall(r"^## `(veco-[a-z0-9-]+)`\n.*?```bash\n(.*?)\n```", text, re.M | re.S))


@pytest.mark.parametrize("program", console_scripts())
def test_help_ends_with_the_example_of_its_doc(program):
    example = cli_examples().get(program)
    assert example, f"docs/cli.md has no example block under ## `{program}`"
    assert example.startswith(program + " ") and "\n" not in example
    last = script_help(program).strip().split("\n\n")[-1]
    assert _normalized(last) == _normalized(f"example: {example}"), last
