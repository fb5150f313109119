"""A checkpoint as ``fairseq-train --save-dir`` leaves it (no sentencepiece model, no
dict.txt next to it) works in every tool that loads one without --spm-model/--dict: its
vocabulary is found in the data directory its training recorded, by the one rule of
``veco_plugin.checkpoints.encoder``; moved data is one line naming where it looked. Each
tool through its entry point in the test process."""

import torch

from tests.helpers.refusals import ran, refused
from tests.helpers.runner import REPO
from veco_plugin.checkpoints.trusted_load import load_trusted
from veco_plugin.cli import align, export_hf, retrieve, tatoeba_eval

TEXT = f"{REPO}/tests/fixtures/text"
PAIR = ["--src", f"{TEXT}/valid.en", "--tgt", f"{TEXT}/valid.de", "--cpu"]


def test_every_tool_finds_the_vocabulary_in_the_training_data(cold_start, tmp_path, capsys):
    """Was: 'no sentencepiece.bpe.model or spm.model next to it' (veco-retrieve,
    veco-tatoeba-eval, veco-export-hf) and 'give the subword model' (veco-align)."""
    beside = {p.name for p in cold_start.parent.iterdir()}
    assert not beside & {"spm.model", "sentencepiece.bpe.model", "dict.txt"}, beside
    aligned = ran(align, ["--path", cold_start, *PAIR], capsys)
    assert len(aligned.stdout.splitlines()) == len(open(f"{TEXT}/valid.en").readlines())
    retrieved = ran(retrieve, ["--path", cold_start, *PAIR], capsys)
    assert retrieved.stdout.startswith("src->tgt top-1 accuracy ")
    ran(export_hf, ["--path", cold_start, "--output", tmp_path / "hf"], capsys)
    assert (tmp_path / "hf" / "config.json").is_file()
    tatoeba = ["--data", f"{REPO}/tests/fixtures/tatoeba", "--test", "de", "--cpu"]
    scored = ran(tatoeba_eval, ["--checkpoint", f"cold={cold_start}", *tatoeba], capsys)
    assert "| cold |" in scored.stdout, scored.stdout


def test_moved_training_data_is_one_line_naming_where_it_looked(cold_start, tmp_path, capsys):
    state = load_trusted(str(cold_start))
    state["cfg"]["task"]["data"] = str(tmp_path / "moved")
    moved = tmp_path / "checkpoint_last.pt"
    torch.save(state, moved)
    assert refused(retrieve, ["--path", moved, *PAIR], "veco-retrieve", capsys) == (
        f"veco-retrieve: error: --path {moved}: no sentencepiece.bpe.model or spm.model next "
        f"to it nor in its training data {tmp_path / 'moved'}: pass the sentencepiece model it "
        "was trained with as --spm-model"
    )
