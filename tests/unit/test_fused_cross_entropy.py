"""``--fused-lm-loss``: the LM head's vocabulary projection and cross-entropy a chunk of rows
at a time (``veco_plugin.modules.fused_cross_entropy``).

The same per-token losses, correctness and gradients (x, W, b) as ``F.linear`` then
``F.cross_entropy`` on fp32 logits (fp32: the same sums in other groupings; bf16: both round
the logits to bf16 first, the gradients' products differ in rounding); the tensors saved for the
backward hold no (M, V) logits; through the criteria, the flag changes no loss, logged value or
gradient."""

import pytest
import torch
import torch.nn.functional as F

from tests.helpers.toy import ToyTask, build, toy_dictionary
from tests.helpers.word_list import table_criterion
from tests.unit.test_packing import batches
from veco_plugin.modules.fused_cross_entropy import linear_cross_entropy
from veco_plugin.objectives import build_criterion

M, C, V = 37, 16, 101
FP32 = dict(rtol=1e-5, atol=1e-6)
BF16 = dict(rtol=2e-2, atol=2e-2)
MODEL = dict(rtol=1e-4, atol=1e-5)
"""A whole model's gradients, summed over other groupings (losses summed to ~1000)."""


def inputs(dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(M, C, generator=g).to(dtype).requires_grad_()
    weight = torch.randn(V, C, generator=g).to(dtype).requires_grad_()
    bias = torch.randn(V, generator=g).to(dtype).requires_grad_()
    target = torch.randint(0, V, (M,), generator=g)
    return x, weight, bias, target


def unfused(x, weight, bias, target):
    logits = F.linear(x, weight, bias)
    return F.cross_entropy(logits.float(), target, reduction="none"), logits.argmax(-1) == target


def losses_and_grads(fn, args):
    loss, correct = fn(*args)
    upstream = torch.linspace(0.5, 1.5, M)  # each row's loss weighted differently
    (loss * upstream).sum().backward()
    grads = [a.grad.clone() for a in args[:3]]
    for a in args[:3]:
        a.grad = None
    return loss.detach(), correct, grads


@pytest.mark.parametrize("dtype,tolerance", [(torch.float32, FP32), (torch.bfloat16, BF16)])
def test_the_same_losses_and_gradients_as_the_projection_then_cross_entropy(dtype, tolerance):
    args = inputs(dtype)
    loss_a, correct_a, grads_a = losses_and_grads(unfused, args)
    loss_b, correct_b, grads_b = losses_and_grads(
        lambda *a: linear_cross_entropy(*a, chunk=8), args  # 5 chunks, the last of 5 rows
    )
    assert loss_b.dtype == torch.float32
    torch.testing.assert_close(loss_b, loss_a, **tolerance)
    if dtype == torch.float32:
        assert correct_b.equal(correct_a)
    for name, a, b in zip(("x", "weight", "bias"), grads_a, grads_b):
        assert b.dtype == dtype
        torch.testing.assert_close(b, a, **tolerance, msg=name)


def saved_tensors(fn, args):
    """The shapes of the tensors autograd keeps for the backward of ``fn(*args)``."""
    shapes = []

    def pack(t):
        shapes.append(tuple(t.shape))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*args)
    return shapes


def test_no_logits_are_kept_for_the_backward():
    args = inputs()
    assert (M, V) in saved_tensors(unfused, args)
    shapes = saved_tensors(linear_cross_entropy, args)
    assert sorted(shapes) == sorted([(M, C), (V, C), (V,), (M,), (M,)])  # x, W, b, t, lse


@pytest.mark.parametrize("name", ["ca_mlm", "tlm", "veco_terms"])
def test_the_flag_changes_no_loss_logged_value_or_gradient(name, tmp_path):
    d = toy_dictionary()
    if name == "veco_terms":  # the plain MLM beside TLM
        criterion = build_criterion(name, ToyTask(d), terms="mono_mlm=1,bi_tlm=1")
    else:
        criterion = table_criterion(name, d, tmp_path)
    _, packed = batches(d)
    sample = {"mono": packed, "bi": packed}
    results = []
    for fused in (False, True):
        model = build("veco_tiny", d, fused_lm_loss=fused)
        criterion.extend_model(model)
        model.train()
        loss, size, logged = criterion(model, sample)
        loss.backward()
        grads = {n: p.grad for n, p in model.named_parameters() if p.grad is not None}
        results.append((loss.detach(), size, logged, grads))
    (loss_a, size_a, log_a, grads_a), (loss_b, size_b, log_b, grads_b) = results
    assert size_a == size_b and grads_a.keys() == grads_b.keys()
    torch.testing.assert_close(loss_b, loss_a, **MODEL)
    for key in grads_a:
        torch.testing.assert_close(grads_b[key], grads_a[key], **MODEL, msg=key)
    assert log_a.keys() == log_b.keys()
    for key, value in log_a.items():
        torch.testing.assert_close(torch.as_tensor(log_b[key]), torch.as_tensor(value), **MODEL)
