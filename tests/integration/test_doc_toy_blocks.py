"""The docs' blocks marked ``<!-- runs: toy -->`` run as written (docs/README.md): how they
run is tests/helpers/toy_blocks.py."""

from pathlib import Path

import pytest

from tests.helpers.runner import REPO
from tests.helpers.toy_blocks import DOCS, block_log, marked_blocks, toy_run


def test_the_readme_marks_the_toy_jobs():
    shown = " ".join(block for _, block in marked_blocks(Path(REPO, "README.md")))
    for command in ("fairseq-train", "veco-init-nmt", "translation_from_pretrained_veco"):
        assert command in shown
    assert "veco-xtreme" in shown and "veco-derived-transfer" in shown


@pytest.mark.parametrize("doc", [d for d in DOCS if marked_blocks(d)], ids=lambda d: d.name)
def test_marked_blocks_run_as_written(doc, tmp_path_factory):
    folder = toy_run(tmp_path_factory, doc)  # a block that fails or does not print raises
    for i, (prints, _) in enumerate(marked_blocks(doc)):
        assert prints in block_log(folder, i).read_text(errors="replace")
