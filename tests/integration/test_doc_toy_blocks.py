"""The docs' blocks marked ``<!-- runs: toy -->`` run as written (docs/README.md).

Each file's marked blocks run in order, with ``bash -e``, in one scratch directory that sees
the repository's ``tests/``, ``scripts/``, ``veco_plugin/`` and ``examples/`` (a later block
reads what an earlier one wrote; nothing is written into the clone), the venv's ``bin`` first
on the ``PATH``. Each must exit 0 and print the text after ``prints:``. The blocks that
depend on nothing before them (a first ``veco-derived-transfer``) run beside the others.
"""

import os
import re
import subprocess
import time
from pathlib import Path
from typing import List, Tuple

import pytest

from tests.helpers.runner import REPO, env

DOCS = [Path(REPO, "README.md"), *sorted(Path(REPO, "docs").glob("*.md"))]
MARKED = re.compile(r"^<!-- runs: toy(?:, prints: (.*?))? -->\n```bash\n(.*?)```", re.M | re.S)
LINKED = ("tests", "scripts", "veco_plugin", "examples")
ALONE = ("veco-derived-transfer",)  # reads only the repository's files: runs beside the chain


def marked_blocks(doc: Path) -> List[Tuple[str, str]]:
    """(expected output, script) of each marked block of ``doc``, in order."""
    text = re.sub(r"^````.*?^````", "", doc.read_text("utf-8"), flags=re.M | re.S)  # examples
    return [(prints or "", block) for prints, block in MARKED.findall(text)]


def test_the_readme_marks_the_toy_jobs():
    shown = " ".join(block for _, block in marked_blocks(Path(REPO, "README.md")))
    for command in ("fairseq-train", "veco-init-nmt", "translation_from_pretrained_veco"):
        assert command in shown
    assert "veco-xtreme" in shown and "veco-derived-transfer" in shown


def _start(block: str, cwd: Path, log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        ["bash", "-e", "-c", block],
        cwd=cwd,
        env=env(OMP_NUM_THREADS="1"),
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )


def _ended(proc: subprocess.Popen, log: Path, prints: str, block: str, timeout: float) -> str:
    proc.wait(timeout=timeout)
    out = log.read_text(errors="replace")
    assert proc.returncode == 0, f"{block}\n-> exit {proc.returncode}:\n{out[-3000:]}"
    assert prints in out, f"{block}\n-> does not print {prints!r}:\n{out[-3000:]}"
    return out


@pytest.mark.parametrize("doc", [d for d in DOCS if marked_blocks(d)], ids=lambda d: d.name)
def test_marked_blocks_run_as_written(doc, tmp_path):
    for name in LINKED:
        os.symlink(Path(REPO, name), tmp_path / name)
    blocks = marked_blocks(doc)
    alone = [(i, b) for i, b in enumerate(blocks) if b[1].lstrip().startswith(ALONE)]
    started = time.monotonic()
    beside = [
        (_start(block, tmp_path, tmp_path / f"block{i}.log"), i, prints, block)
        for i, (prints, block) in alone
    ]
    try:
        for i, (prints, block) in enumerate(blocks):
            if (i, (prints, block)) in alone:
                continue
            log = tmp_path / f"block{i}.log"
            _ended(_start(block, tmp_path, log), log, prints, block, timeout=600)
        for proc, i, prints, block in beside:
            _ended(proc, tmp_path / f"block{i}.log", prints, block, timeout=600)
    finally:
        for proc, *_ in beside:
            if proc.poll() is None:
                proc.kill()
    print(f"{doc.name}: {len(blocks)} blocks in {time.monotonic() - started:.0f} s")
