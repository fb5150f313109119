"""Terms live once: every registered criterion is a recipe over them, and
``--criterion veco_terms --terms KEY=W,...`` trains any weighted combination."""

import pytest
import torch

from tests.helpers.toy import ToyTask, build, pair_batch, toy_dictionary
from veco_plugin.errors import VecoUserError
from veco_plugin.objectives import build_criterion
from veco_plugin.terms import TERM_KEYS, key_of, parse_terms

RECIPES = {
    "ca_mlm": "mono_mlm=1,bi_mlm=1,mono_ca=1,bi_ca=1,bi_tlm=1",
    "tlm": "mono_mlm=1,bi_tlm=1",
    "dwa": "mono_mlm=1,bi_tlm=1,bi_dwa=1",
}


def _run(name, d, model, sample, **settings):
    criterion = build_criterion(name, ToyTask(d), **settings)
    criterion.extend_model(model)
    return criterion, criterion(model, sample)


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_each_registered_recipe_equals_its_terms_command_line(recipe):
    d = toy_dictionary()
    model = build("veco_tiny", d, seed=0).eval()
    sample = {"mono": pair_batch(d, seed=0), "bi": pair_batch(d, seed=1)}
    _, (loss, size, log) = _run(recipe, d, model, sample)
    _, (mixed, mixed_size, mixed_log) = _run("veco_terms", d, model, sample, terms=RECIPES[recipe])
    assert torch.equal(loss, mixed) and size == mixed_size
    assert set(log) == set(mixed_log)


def test_a_non_paper_combination_is_the_weighted_sum_and_trains_every_part():
    """CA-MLM's cross terms + XLM-Align's DWA + TLM: one model call, every part learns."""
    d = toy_dictionary()
    model = build("veco_tiny", d, seed=0).eval()
    sample = {"mono": pair_batch(d, seed=2), "bi": pair_batch(d, seed=3)}
    weights = "mono_ca=0.5,bi_ca=0.5,bi_tlm=2,bi_dwa=3"
    criterion, (loss, _, log) = _run("veco_terms", d, model, sample, terms=weights)
    names = [k[: -len("_loss")] for k in log if k.endswith("_loss") and k != "loss"]
    assert {key_of(n) for n in names} == {"mono_ca", "bi_ca", "bi_tlm", "bi_dwa"}
    expected = sum(criterion.weights[key_of(n)] * log[f"{n}_loss"] for n in names)
    torch.testing.assert_close(loss.detach(), expected)
    loss.backward()
    assert model.pointer.q_proj.weight.grad.abs().sum() > 0
    assert any(
        p.grad is not None and p.grad.abs().sum() > 0 for p in model.cross_attention_parameters()
    )
    assert criterion.needs_warm_start and criterion.extensions == ("pointer",)


@pytest.mark.parametrize(
    "text,message",
    [
        ("mono_mlm=1,bogus=2", "unknown term 'bogus'; choose from mono_mlm"),
        ("mono_mlm=x", "the weight must be a number"),
        ("bi_tlm=1,bi_tlm=2", "bi_tlm is given twice"),
        ("bi_tlm=0", "at least one term with a non-zero weight"),
    ],
)
def test_bad_terms_name_the_flag(text, message):
    with pytest.raises(VecoUserError, match="--terms") as error:
        parse_terms(text)
    assert message in str(error.value)


def test_keys_are_unique_and_a_bare_key_weighs_one():
    assert len(set(TERM_KEYS)) == len(TERM_KEYS)
    assert parse_terms("mono_mlm, align=10") == {"mono_mlm": 1.0, "align": 10.0}


@pytest.mark.parametrize("name", ["tlm", "dwa", "weam", "veco_terms"])
def test_idle_cross_attention_under_pytorch_ddp_is_refused_in_one_line(name):
    ddp = {"distributed_world_size": 2, "ddp_backend": "pytorch_ddp"}
    with pytest.raises(VecoUserError, match=f"--criterion {name} leaves the cross-attention idle"):
        build_criterion(name, ToyTask(toy_dictionary()), **ddp)
    build_criterion(name, ToyTask(toy_dictionary()), find_unused_parameters=True, **ddp)
    build_criterion("ca_mlm", ToyTask(toy_dictionary()), **ddp)  # the cross terms use it
