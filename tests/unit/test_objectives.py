"""The objectives table and criteria built from their dataclass configs."""

import re

import pytest
import torch
from fairseq.criterions import CRITERION_DATACLASS_REGISTRY, CRITERION_REGISTRY

from tests.helpers.toy import ToyTask, build, pair_batch, toy_dictionary
from veco_plugin.criterions.masked_terms import MaskedTermsConfig, MaskedTermsCriterion
from veco_plugin.data.bilingual_dictionary import ResolvedDictionary, save_resolved
from veco_plugin.objectives import (
    NEEDS,
    OBJECTIVES,
    PATH_NEEDS,
    WORD_ALIGNMENTS,
    WORD_LIST,
    benchmark_variants,
    build_criterion,
    criterion_config,
    objective,
)
from veco_plugin.terms import key_of

VARIANTS = sorted(name for row in OBJECTIVES for name, _ in row.benchmark)


@pytest.fixture
def word_list(tmp_path):
    """A resolved toy word list at ``{word_list}/train.txt`` and ``heldout.txt``."""
    d = toy_dictionary()
    pairs = [(("w1",), ("w2",)), (("w3",), ("w4", "w5")), (("w6", "w7"), ("w8",))]
    words = [(" ".join(s), " ".join(t)) for s, t in pairs]
    ids = [(tuple(map(d.index, s)), tuple(map(d.index, t))) for s, t in pairs]
    for name in ("train", "heldout"):
        save_resolved(ResolvedDictionary.from_pieces(words, ids, d.pad()), f"{tmp_path}/{name}.txt")
    return str(tmp_path)


def _build(name, task, save_dir, **settings):
    """``build_criterion``; a criterion that saves next to the checkpoints saves in ``save_dir``."""
    if "save_dir" in CRITERION_DATACLASS_REGISTRY[name].__dataclass_fields__:
        settings["save_dir"] = save_dir
    return build_criterion(name, task, **settings)


def _links(batch):
    """``links`` (B, W, W): x piece i -- y piece i (``pair_batch`` pairs one sentence)."""
    width, lengths = batch["pair_tokens"].size(1), batch["first_lengths"].tolist()
    links = torch.zeros(len(lengths), width, width, dtype=torch.bool)
    for b, length in enumerate(lengths):
        links[b, range(1, length - 1), range(1, length - 1)] = True
    return links


def test_every_row_is_a_registered_masked_terms_criterion():
    for row in OBJECTIVES:
        assert issubclass(CRITERION_REGISTRY[row.criterion], MaskedTermsCriterion)
        assert row.starts_from is None or objective(row.starts_from).run == row.starts_from
    for column in ("run", "criterion", "label"):
        values = [getattr(row, column) for row in OBJECTIVES]
        assert len(set(values)) == len(values), column
    with pytest.raises(KeyError, match="no objective 'nope'"):
        objective("nope")


def test_shared_settings_come_from_one_config_base():
    for row in OBJECTIVES:
        cfg = criterion_config(row.criterion)
        for name in MaskedTermsConfig.__dataclass_fields__:
            assert name in cfg, (row.criterion, name)


def test_needs_and_train_flags_are_declared_in_the_table():
    for row in OBJECTIVES:
        assert set(row.needs) <= set(NEEDS), row.criterion
        placeholders = set(re.findall(r"\{(\w+)\}", " ".join(row.train_flags)))
        assert placeholders <= set(row.needs) & set(PATH_NEEDS), row.criterion
        assert row.train_flags[:1] == () or row.train_flags[0].startswith("--")
    align, weam = objective("align_mlm"), objective("weam")
    assert (align.run, weam.run) == ("alignmlm", "weam")
    assert align.needs == (WORD_LIST,) and weam.needs == (WORD_ALIGNMENTS,)
    assert align.quickstart_switch and weam.quickstart_switch
    assert align.translate and weam.translate and not (align.aligns or weam.aligns)
    assert align.train_args(word_list="/w") == [
        "--align-dictionary", "/w/train.txt", "--align-heldout", "/w/heldout.txt"
    ]  # fmt: skip
    assert weam.train_args() == ["--bi-mask-prob", "0.3"]  # the paper's 30%
    # the criterion's own flags become settings; the task's (--bi-mask-prob) do not
    assert align.criterion_settings(word_list="/w") == {
        "align_dictionary": "/w/train.txt", "align_heldout": "/w/heldout.txt"
    }  # fmt: skip
    assert weam.criterion_settings() == {}
    with pytest.raises(KeyError, match=r"align_mlm's train_flags need the path \{word_list\}"):
        align.train_args()
    for row in OBJECTIVES:
        if not row.needs:
            assert row.train_flags == () and row.train_args() == [], row.criterion


@pytest.mark.parametrize("variant", VARIANTS)
def test_benchmark_variants_build_with_their_settings(variant, word_list, tmp_path):
    variants = benchmark_variants(word_list=word_list)
    assert sorted(variants) == VARIANTS
    name, settings = variants[variant]
    criterion = _build(name, ToyTask(toy_dictionary()), str(tmp_path / "ck"), **settings)
    for key, value in settings.items():
        assert criterion.cfg[key] == value
    if WORD_LIST in objective(name).needs:
        assert settings["align_dictionary"] == f"{word_list}/train.txt"


@pytest.mark.parametrize(
    "name,settings",
    [
        ("ca_mlm", {"mlm_weight": 0.5, "ca_weight": 2.0, "tlm_weight": 3.0}),
        ("tlm", {"mlm_weight": 0.25, "tlm_weight": 4.0}),
        ("dwa", {"mlm_weight": 2.0, "tlm_weight": 0.5, "dwa_weight": 3.0}),
        ("align_mlm", {"mlm_weight": 0.5, "tlm_weight": 2.0, "align_weight": 3.0}),
        ("weam", {"mlm_weight": 0.5, "tlm_weight": 2.0, "cp_weight": 3.0}),
    ],
)
def test_loss_is_the_explicitly_weighted_sum_of_the_logged_terms(
    name, settings, word_list, tmp_path
):
    """Each row built with its table settings (a word list, links in the bilingual batch)."""
    d = toy_dictionary()
    model = build("veco_tiny", d, seed=0)
    table = objective(name).criterion_settings(word_list=word_list)
    save_dir = str(tmp_path / "ck")
    criterion = _build(name, ToyTask(d), save_dir, **table, **settings)
    criterion.extend_model(model)
    model.eval()  # same dropout-free forward for both criteria
    sample = {"mono": pair_batch(d, seed=0), "bi": pair_batch(d, seed=1)}
    if WORD_ALIGNMENTS in objective(name).needs:
        sample["bi"]["links"] = _links(sample["bi"])
    loss, _, log = criterion(model, sample)
    terms = [k[: -len("_loss")] for k in log if k.endswith("_loss") and k != "loss"]
    assert {key_of(t) for t in terms} <= set(criterion.weights)
    weighted = sum(criterion.weights[key_of(t)] * log[f"{t}_loss"] for t in terms)
    if "align_cos_sum" in log:  # L_ALIGN = -mean cosine, not a token loss
        align = -log["align_cos_sum"] / log["align_entries"] * log["sample_size"]
        weighted = weighted + criterion.weights["align"] * align
    torch.testing.assert_close(loss, weighted)
    unweighted, _, _ = _build(name, ToyTask(d), save_dir, **table)(model, sample)
    assert not torch.allclose(loss, unweighted)
