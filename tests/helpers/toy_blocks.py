"""The docs' blocks marked ``<!-- runs: toy -->``, run as written (docs/README.md), once per
test run.

Each file's marked blocks run in order, with ``bash -e``, in one scratch directory that sees
the repository's ``tests/``, ``scripts/``, ``veco_plugin/`` and ``examples/`` (a later block
reads what an earlier one wrote; nothing is written into the clone), the venv's ``bin`` first
on the ``PATH``. Each must exit 0 and print the text after ``prints:``. The blocks that
depend on nothing before them (a first ``veco-derived-transfer``) run beside the others.
Other tests read what a block wrote (the README's regime curve: test_derived_curve.py).
"""

import os
import re
import subprocess
import time
from pathlib import Path
from typing import List, Tuple

import pytest

from tests.helpers.runner import REPO, env
from tests.helpers.shared import built_once

README = Path(REPO, "README.md")
DOCS = [README, *sorted(Path(REPO, "docs").glob("*.md"))]
MARKED = re.compile(r"^<!-- runs: toy(?:, prints: (.*?))? -->\n```bash\n(.*?)```", re.M | re.S)
LINKED = ("tests", "scripts", "veco_plugin", "examples")
ALONE = ("veco-derived-transfer",)  # reads only the repository's files: runs beside the chain


def marked_blocks(doc: Path) -> List[Tuple[str, str]]:
    """(expected output, script) of each marked block of ``doc``, in order."""
    text = re.sub(r"^````.*?^````", "", doc.read_text("utf-8"), flags=re.M | re.S)  # examples
    return [(prints or "", block) for prints, block in MARKED.findall(text)]


def block_log(folder: Path, index: int) -> Path:
    """What block ``index`` (of :func:`marked_blocks`) printed, stdout and stderr."""
    return folder / f"block{index}.log"


def _start(block: str, cwd: Path, log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        ["bash", "-e", "-c", block],
        cwd=cwd,
        env=env(OMP_NUM_THREADS="1"),
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )


def _ended(proc: subprocess.Popen, log: Path, prints: str, block: str, timeout: float) -> None:
    proc.wait(timeout=timeout)
    out = log.read_text(errors="replace")
    assert proc.returncode == 0, f"{block}\n-> exit {proc.returncode}:\n{out[-3000:]}"
    assert prints in out, f"{block}\n-> does not print {prints!r}:\n{out[-3000:]}"


def run_blocks(doc: Path, folder: Path) -> None:
    """Run ``doc``'s marked blocks in ``folder``; the first that fails raises, naming it."""
    for name in LINKED:
        os.symlink(Path(REPO, name), folder / name)
    blocks = marked_blocks(doc)
    alone = [i for i, (_, block) in enumerate(blocks) if block.lstrip().startswith(ALONE)]
    started = time.monotonic()
    beside = [(_start(blocks[i][1], folder, block_log(folder, i)), i) for i in alone]
    try:
        for i, (prints, block) in enumerate(blocks):
            if i not in alone:
                _ended(_start(block, folder, block_log(folder, i)), block_log(folder, i),
                       prints, block, timeout=600)  # fmt: skip
        for proc, i in beside:
            _ended(proc, block_log(folder, i), *blocks[i], timeout=600)
    finally:
        for proc, _ in beside:
            if proc.poll() is None:
                proc.kill()
    print(f"{doc.name}: {len(blocks)} blocks in {time.monotonic() - started:.0f} s")


def toy_run(tmp_path_factory: pytest.TempPathFactory, doc: Path) -> Path:
    """The directory where ``doc``'s marked blocks ran, each to its end (run once per test
    run, by whichever worker asks first)."""
    return built_once(tmp_path_factory, f"toy-{doc.stem}", lambda folder: run_blocks(doc, folder))
