"""``--compile-layers``: every encoder layer of ``veco`` compiled in place (``torch.compile``).

Under dynamo, on one tiny layer: no graph break in either stream (plug-out and plug-in,
padded or packed); new shapes compile each way of calling it at most twice (static, then
with dynamic sizes: torch's automatic dynamic); outputs and gradients equal eager's
(dropout 0) through AOTAutograd (``aot_eager``: the joint graph torch's compilers are given).
Inductor's own kernels (a CPU compile takes a minute or more) are checked the same way in
``make test-slow``, and timed by ``benchmarks/trainer_speed.py --compile-layers``.
"""

import copy

import pytest
import torch
import torch._dynamo as dynamo
from torch._dynamo.testing import CompileCounter

from tests.helpers.toy import build, toy_dictionary

T, B, S, C = 12, 3, 10, 64
TOLERANCE = dict(rtol=1e-5, atol=1e-6)
"""fp32: the same products, fused or reordered by the compiler."""


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    dynamo.reset()
    yield
    dynamo.reset()


def tiny_layer():
    """Layer 1 of ``veco_tiny`` (2 x 64, 4 heads), dropout 0, training mode."""
    model = build("veco_tiny", toy_dictionary(), activation_dropout=0.0)
    return model.train().sentence_encoder.layers[0]


def calls(t: int = T, b: int = B, s: int = S, seed: int = 0):
    """The layer's arguments for each way a stream calls it: (name, args); x (t, b, C)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(t, b, C, generator=g)
    memory = torch.randn(s, b, C, generator=g)
    padding = torch.zeros(b, t, dtype=torch.bool)
    padding[0, -2:] = True
    memory_padding = torch.zeros(b, s, dtype=torch.bool)
    memory_padding[-1, -3:] = True
    segments = torch.zeros(b, 1, t, t)  # two segments a row: additive block-diagonal mask
    segments[:, :, : t // 2, t // 2 :] = segments[:, :, t // 2 :, : t // 2] = float("-inf")
    across = torch.zeros(b, 1, t, s)
    across[:, :, : t // 2, s // 2 :] = across[:, :, t // 2 :, : s // 2] = float("-inf")
    return [
        ("plug-out padded", (x, padding)),
        ("plug-out packed", (x, None, segments)),
        ("plug-in padded", (x, padding, None, memory, memory_padding)),
        ("plug-in packed", (x, None, segments, memory, None, across)),
    ]


def run(layer, args):
    """Output and the gradients of x, the memory and every parameter, of sum(output * w)."""
    args = [a.clone().requires_grad_() if torch.is_tensor(a) and a.is_floating_point()
            and a.dim() == 3 else a for a in args]  # fmt: skip
    layer.zero_grad()
    out = layer(*args)
    weights = torch.linspace(-1, 1, out.numel()).view_as(out)
    (out * weights).sum().backward()
    grads = [a.grad for a in args if torch.is_tensor(a) and a.requires_grad]
    grads += [p.grad.clone() for p in layer.parameters() if p.grad is not None]
    return out.detach(), grads


def test_the_flag_compiles_every_layer_in_place():
    d = toy_dictionary()
    plain, compiled = build("veco_tiny", d), build("veco_tiny", d, compile_layers=True)
    assert all(layer._compiled_call_impl is None for layer in plain.sentence_encoder.layers)
    assert all(layer._compiled_call_impl is not None for layer in compiled.sentence_encoder.layers)
    # the same parameters under the same names: checkpoints load either way
    assert compiled.state_dict().keys() == plain.state_dict().keys()


def test_no_stream_breaks_the_graph_and_a_new_shape_compiles_once_more():
    layer = tiny_layer()
    counter = CompileCounter()
    layer.compile(backend=counter, fullgraph=True)  # a graph break raises
    for _, args in calls():
        layer(*args)
    assert counter.frame_count == 4  # four ways of calling it: memory, padding or segments
    # a new shape compiles the way once more, with dynamic sizes; later shapes reuse that
    for t, b, s in [(20, 5, 7), (33, 2, 40), (9, 6, 30)]:
        layer(*calls(t, b, s)[-1][1])
    assert counter.frame_count == 5


def test_compiled_outputs_and_gradients_equal_eager():
    eager = tiny_layer()
    compiled = copy.deepcopy(eager)
    compiled.compile(backend="aot_eager", dynamic=False)
    for name, args in calls()[::3]:  # plug-out padded (fairseq's layer), plug-in packed
        (out_a, grads_a), (out_b, grads_b) = run(eager, args), run(compiled, args)
        torch.testing.assert_close(out_b, out_a, **TOLERANCE, msg=name)
        assert len(grads_a) == len(grads_b)
        for grad_a, grad_b in zip(grads_a, grads_b):
            torch.testing.assert_close(grad_b, grad_a, **TOLERANCE, msg=name)


@pytest.mark.slow
def test_inductor_outputs_and_gradients_equal_eager():
    eager = tiny_layer()
    compiled = copy.deepcopy(eager)
    compiled.compile(dynamic=False)
    for name, args in calls()[2:]:  # both masks' paths, through every sub-layer
        (out_a, grads_a), (out_b, grads_b) = run(eager, args), run(compiled, args)
        torch.testing.assert_close(out_b, out_a, rtol=1e-4, atol=1e-5, msg=name)
        for grad_a, grad_b in zip(grads_a, grads_b):
            torch.testing.assert_close(grad_b, grad_a, rtol=1e-4, atol=1e-5, msg=name)
