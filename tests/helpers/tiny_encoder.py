"""A tiny pre-trained-encoder checkpoint on real text, for the retrieval scorers' tests: a
random ``veco_tiny`` (2 layers, 512 positions) with a sentencepiece model and dict.txt
trained on LASER's Tatoeba excerpts (tests/fixtures/tatoeba)."""

import glob
from pathlib import Path

import torch
from fairseq.data import Dictionary

from tests.helpers.runner import REPO
from tests.helpers.toy import build, model_args
from veco_plugin.corpora.subwords import train_sentencepiece, write_dictionary

LASER = f"{REPO}/tests/fixtures/tatoeba"


def write_tiny_encoder(out: Path, seed: int = 5) -> Path:
    """``out/m.pt`` (fairseq's legacy layout, task masked_lm), ``out/spm.model``,
    ``out/dict.txt``; returns ``out``."""
    spm = train_sentencepiece(sorted(glob.glob(f"{LASER}/tatoeba.*-eng.*")), str(out / "spm"), 1000)
    write_dictionary(spm, str(out / "dict.txt"))
    d = Dictionary.load(str(out / "dict.txt"))
    d.add_symbol("<mask>")
    sizes = dict(max_positions=512, tokens_per_sample=512)
    model = build("veco_tiny", d, seed=seed, **sizes).eval()
    history = [{"criterion_name": "masked_lm", "lr_scheduler_state": {}, "num_updates": 0}]
    state = {"model": model.state_dict(), "args": model_args("veco_tiny", **sizes), "cfg": None}
    torch.save({**state, "optimizer_history": history, "extra_state": {}}, out / "m.pt")
    return out
