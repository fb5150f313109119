"""``align_mlm`` (ALIGN-MLM §3): MLM + alpha * L_ALIGN on the input embeddings."""

import os

import pytest
import torch
import torch.nn.functional as F

from tests.helpers.toy import ToyTask, build, pair_batch, toy_dictionary
from veco_plugin.data.bilingual_dictionary import (
    ResolvedDictionary,
    load_resolved,
    save_resolved,
)
from veco_plugin.errors import VecoUserError
from veco_plugin.objectives import build_criterion
from veco_plugin.terms.dictionary_alignment import RESOLVED_NAME

# word pairs over the toy vocabulary: single pieces and a two-piece target word
PAIRS = [(("w1",), ("w2",)), (("w3",), ("w4", "w5")), (("w6", "w7"), ("w8",)), (("w9",), ("w10",))]


def _resolved(d, pairs=PAIRS):
    words = [(" ".join(s), " ".join(t)) for s, t in pairs]
    ids = [(tuple(d.index(p) for p in s), tuple(d.index(p) for p in t)) for s, t in pairs]
    return ResolvedDictionary.from_pieces(words, ids, d.pad(), source="toy")


@pytest.fixture
def files(tmp_path):
    d = toy_dictionary()
    save_resolved(_resolved(d), str(tmp_path / "train.tsv"))
    save_resolved(_resolved(d, PAIRS[:2]), str(tmp_path / "heldout.tsv"))
    return d, tmp_path


def _criterion(d, tmp_path, **settings):
    settings.setdefault("align_dictionary", str(tmp_path / "train.tsv"))
    return build_criterion("align_mlm", ToyTask(d), save_dir=str(tmp_path / "ck"), **settings)


def test_loss_is_mlm_plus_alpha_times_minus_mean_cosine(files):
    d, tmp = files
    model = build("veco_tiny", d, seed=0).eval()
    batch = pair_batch(d, seed=0)
    loss, size, log = _criterion(d, tmp, align_weight=10.0)(model, {"mono": batch})

    E = model.encoder.sentence_encoder.embed_tokens.weight
    cos = [
        F.cosine_similarity(
            E[[d.index(p) for p in s]].mean(0), E[[d.index(p) for p in t]].mean(0), dim=0
        )
        for s, t in PAIRS
    ]
    l_align = -torch.stack(cos).mean()
    mlm_only = log["mono_mlm_loss"]
    torch.testing.assert_close(loss / size, (mlm_only + 10.0 * l_align * size) / size)
    torch.testing.assert_close(log["align_cos_sum"] / log["align_entries"], -l_align.detach())
    assert "align_hits" not in log  # no --align-heldout


def test_gradient_reaches_exactly_the_dictionary_rows_of_the_embeddings(files):
    d, tmp = files
    model = build("veco_tiny", d, seed=0)
    criterion = _criterion(d, tmp, mlm_weight=0.0)
    loss, _, _ = criterion(model, {"mono": pair_batch(d, seed=1)})
    loss.backward()
    grad = model.encoder.sentence_encoder.embed_tokens.weight.grad
    rows = {d.index(p) for s, t in PAIRS for p in s + t}
    touched = set(grad.abs().sum(1).nonzero().flatten().tolist())
    assert touched == rows


def test_score_is_logged_at_validation_only_and_the_list_is_saved(files):
    d, tmp = files
    model = build("veco_tiny", d, seed=0)
    criterion = _criterion(d, tmp, align_heldout=str(tmp / "heldout.tsv"))
    _, _, log = criterion(model.train(), {"mono": pair_batch(d)})
    assert "align_queries" not in log
    _, _, log = criterion(model.eval(), {"mono": pair_batch(d)})
    assert int(log["align_queries"]) == 2 and 0 <= int(log["align_hits"]) <= 2
    saved = load_resolved(os.path.join(tmp, "ck", RESOLVED_NAME), d)
    assert list(saved.pieces()) == list(_resolved(d).pieces())


def test_monolingual_batches_alone_and_bf16(files):
    d, tmp = files
    model = build("veco_tiny", d, seed=0).to(torch.bfloat16)
    loss, _, log = _criterion(d, tmp)(model, {"mono": pair_batch(d)})
    assert torch.isfinite(loss) and "bi_tlm_loss" not in log


def test_missing_dictionary_is_one_line(files):
    d, tmp = files
    with pytest.raises(VecoUserError, match="needs --align-dictionary FILE"):
        build_criterion("align_mlm", ToyTask(d), save_dir=str(tmp))
    with pytest.raises(VecoUserError, match="--align-dictionary .*nope.txt: no such file"):
        _criterion(d, tmp, align_dictionary=str(tmp / "nope.txt"))
