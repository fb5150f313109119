"""The objectives table and criteria built from their dataclass configs."""

import pytest
import torch
from fairseq.criterions import CRITERION_REGISTRY

from tests.helpers.toy import ToyTask, build, pair_batch, toy_dictionary
from veco_plugin.criterions.masked_terms import MaskedTermsConfig, MaskedTermsCriterion
from veco_plugin.objectives import (
    OBJECTIVES,
    benchmark_variants,
    build_criterion,
    criterion_config,
    objective,
)
from veco_plugin.terms import key_of


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


@pytest.mark.parametrize("variant", sorted(benchmark_variants()))
def test_benchmark_variants_build_with_their_settings(variant):
    name, settings = benchmark_variants()[variant]
    criterion = build_criterion(name, ToyTask(toy_dictionary()), **settings)
    for key, value in settings.items():
        assert criterion.cfg[key] == value


@pytest.mark.parametrize(
    "name,settings",
    [
        ("ca_mlm", {"mlm_weight": 0.5, "ca_weight": 2.0, "tlm_weight": 3.0}),
        ("tlm", {"mlm_weight": 0.25, "tlm_weight": 4.0}),
        ("dwa", {"mlm_weight": 2.0, "tlm_weight": 0.5, "dwa_weight": 3.0}),
    ],
)
def test_loss_is_the_explicitly_weighted_sum_of_the_logged_terms(name, settings):
    d = toy_dictionary()
    model = build("veco_tiny", d, seed=0)
    criterion = build_criterion(name, ToyTask(d), **settings)
    criterion.extend_model(model)
    model.eval()  # same dropout-free forward for both criteria
    sample = {"mono": pair_batch(d, seed=0), "bi": pair_batch(d, seed=1)}
    loss, _, log = criterion(model, sample)
    terms = [k[: -len("_loss")] for k in log if k.endswith("_loss") and k != "loss"]
    assert {key_of(t) for t in terms} <= set(criterion.weights)
    weighted = sum(criterion.weights[key_of(t)] * log[f"{t}_loss"] for t in terms)
    torch.testing.assert_close(loss, weighted)
    unweighted, _, _ = build_criterion(name, ToyTask(d))(model, sample)
    assert not torch.allclose(loss, unweighted)
