"""Every attention through ``scaled_dot_product_attention``: results and gradients
equal to fairseq's own path, incremental decoding unchanged, and no attention softmax
outside SDPA in any objective's training step."""

import copy
from collections import Counter

import pytest
import torch
from fairseq.modules import MultiheadAttention
from fairseq.sequence_generator import SequenceGenerator
from torch.profiler import ProfilerActivity, profile

from tests.helpers.nmt import build_nmt
from tests.helpers.toy import (
    build,
    diagonal_links,
    pair_batch,
    random_tokens,
    stream_logits,
    toy_dictionary,
)
from tests.helpers.word_list import table_criterion
from veco_plugin.modules.sdpa_attention import VecoSdpaAttention, sdpa_mask
from veco_plugin.objectives import WORD_ALIGNMENTS, objective

# against fairseq's math path: fp32 elementwise (summation order only); bf16 (8-bit
# mantissa, rounding differs between the kernels) as a relative norm error
FP32_TOLERANCE = 1e-5
BF16_RELATIVE_ERROR = 1e-2
ATTENTION_SITES = ("multihead_attention.py", "multi_head_attention_forward", "sdpa_attention.py")
# softmaxes that are not attention: dwa's pointer network and alignment labelling
OTHER_SOFTMAX_SITES = ("veco_plugin/modules/pointer_network.py", "veco_plugin/alignment/")


def fairseq_attention(model):
    """A copy of ``model`` whose attentions are fairseq's ``MultiheadAttention`` (same
    parameters: the class carries no state of its own), i.e. today's path."""
    ref = copy.deepcopy(model)
    for module in ref.modules():
        if isinstance(module, VecoSdpaAttention):
            module.__class__ = MultiheadAttention
    return ref


def assert_close(a, b, dtype):
    a, b = a.float(), b.float()
    if dtype == torch.float32:
        torch.testing.assert_close(a, b, atol=FP32_TOLERANCE, rtol=FP32_TOLERANCE)
    else:
        assert (a - b).norm() <= BF16_RELATIVE_ERROR * b.norm(), (a - b).norm() / b.norm()


def named_grads(module, dtype):
    """Parameter gradients; in bf16 without the key biases', which are exactly 0 (a
    softmax ignores a constant added to all of a query's scores): both kernels return
    rounding noise there, and its relative error is meaningless."""
    return [
        p.grad
        for name, p in module.named_parameters()
        if dtype == torch.float32 or not name.endswith("k_proj.bias")
    ]


def padding(batch: int, length: int) -> torch.Tensor:
    """(B, S) key padding: row b has its last b positions padded."""
    return torch.arange(length).unsqueeze(0) >= length - torch.arange(batch).unsqueeze(1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("kind", ["self", "cross"])
def test_attention_matches_fairseq_math_path_with_gradients(kind, dtype):
    """fairseq's softmax path (need_weights=True, as the cross-attention ran) vs SDPA."""
    torch.manual_seed(0)
    flags = {"self_attention": True} if kind == "self" else {"encoder_decoder_attention": True}
    mine = VecoSdpaAttention(32, 4, **flags).to(dtype)
    ref = fairseq_attention(mine)
    query = torch.randn(7, 3, 32, dtype=dtype)
    memory = query if kind == "self" else torch.randn(9, 3, 32, dtype=dtype)
    mask = padding(3, memory.size(0))
    results = []
    for module, weights in ((mine, False), (ref, True)):
        q = query.clone().requires_grad_()
        m = q if kind == "self" else memory.clone().requires_grad_()
        out, attn = module(q, m, m, key_padding_mask=mask, static_kv=kind == "cross",
                           need_weights=weights)  # fmt: skip
        assert (attn is None) == (not weights)
        out.pow(2).sum().backward()
        grads = [q.grad, m.grad] + named_grads(module, dtype)
        results.append([out] + grads)
        module.zero_grad()
    for a, b in zip(*results):
        assert_close(a, b, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_both_streams_and_gradients_match_fairseq_attention(dtype):
    """H and S stream logits of padded pairs, and every gradient (no stop-gradient, so
    the cross-attention's keys/values back-propagate into H)."""
    d = toy_dictionary()
    model = build("veco_tiny", d).to(dtype)
    ref = fairseq_attention(model)
    tokens = random_tokens(d, 4, 12, pad_tail=4)
    results = []
    for m in (model, ref):
        h, s = stream_logits(m, tokens, stop_gradient=False)
        (h.float().logsumexp(-1).sum() + s.float().logsumexp(-1).sum()).backward()
        results.append([h, s] + named_grads(m, dtype))
    assert len(results[0]) == len(results[1])
    for a, b in zip(*results):
        assert a is not None and b is not None
        assert_close(a, b, dtype)


def test_masks_reach_sdpa_broadcast_and_only_when_needed():
    assert sdpa_mask(None, None, torch.float32) is None
    future = torch.triu(torch.full((3, 3), float("-inf")), 1)
    assert sdpa_mask(future, None, torch.bfloat16).dtype == torch.bfloat16
    pad = padding(2, 3)
    mask = sdpa_mask(None, pad, torch.float32)
    assert mask.shape == (2, 1, 1, 3)  # broadcast over heads and queries, never expanded
    assert mask[1, 0, 0].tolist() == [0.0, 0.0, float("-inf")]
    both = sdpa_mask(future, pad, torch.float32)
    assert both.shape == (2, 1, 3, 3) and torch.isinf(both[1, 0, 0, 1:]).all()


def test_nmt_training_forward_and_gradients_match_fairseq_attention():
    d = toy_dictionary()
    nmt = build_nmt(d)
    ref = fairseq_attention(nmt)
    src, tgt = random_tokens(d, 4, 10, pad_tail=3), random_tokens(d, 4, 8, seed=1)
    results = []
    for m in (nmt, ref):
        m.train()
        logits, extra = m(src, src.ne(d.pad()).sum(1), tgt)
        logits.logsumexp(-1).sum().backward()
        results.append([logits] + [p.grad for p in m.parameters()])
    assert extra["attn"] == [None] or extra["attn"][0] is not None  # fairseq: last layer's
    for a, b in zip(*results):
        assert_close(a, b, torch.float32)


@pytest.mark.parametrize("beam,align", [(1, False), (4, False), (4, True)])
def test_beam_search_unchanged(beam, align):
    """fairseq's SequenceGenerator (incremental state, beam reordering, fairseq's
    beamable encoder attention when the model knows the beam) gives the same
    hypotheses and scores; with ``need_attn`` (``--print-alignment``) the same
    attention."""
    d = toy_dictionary()
    nmt = build_nmt(d).eval()
    ref = fairseq_attention(nmt)
    src = random_tokens(d, 3, 9, pad_tail=2)
    sample = {"net_input": {"src_tokens": src, "src_lengths": src.ne(d.pad()).sum(1)}}
    hypos = []
    for m in (nmt, ref):
        m.make_generation_fast_(beamable_mm_beam_size=beam, need_attn=align)
        gen = SequenceGenerator([m], d, beam_size=beam, max_len_b=12)
        with torch.no_grad():
            hypos.append(gen.generate([m], sample))
    # two kernels (scores agree to FP32_TOLERANCE): the same tokens because every choice
    # among a step's candidates is decided by far more (measured: >= 3.3e-4 apart)
    for mine, theirs in zip(*hypos):
        for a, b in zip(mine, theirs):
            assert torch.equal(a["tokens"], b["tokens"])
            assert_close(a["positional_scores"], b["positional_scores"], torch.float32)
            assert (a["attention"] is None) == (b["attention"] is None) or not align
            if align:
                assert_close(a["attention"], b["attention"], torch.float32)


# --- every objective's step: no attention softmax outside SDPA ------------------------


def attention_calls(model):
    """Count forward calls of every attention module (hooks)."""
    calls = Counter()
    for name, module in model.named_modules():
        if isinstance(module, MultiheadAttention):
            module.register_forward_hook(lambda *_, name=name: calls.update([name]))
    return calls


def softmax_sites(prof):
    """(input shape, Python frames that led to it) of every softmax kernel
    (``aten::_softmax``, which ``softmax`` calls) outside SDPA; with ``with_stack``
    the profiler records each Python call as an event in the op's ``cpu_parent`` chain."""
    sites = []
    for event in prof.events():
        if event.name == "aten::_softmax":
            chain, parent = [], event.cpu_parent
            while parent is not None:
                chain.append(parent.name)
                parent = parent.cpu_parent
            if not any("scaled_dot_product" in name for name in chain):
                sites.append((event.input_shapes[:1], [n for n in chain if ".py(" in n]))
    return sites


@pytest.mark.parametrize("name", ["ca_mlm", "tlm", "dwa", "align_mlm", "weam"])
def test_no_attention_softmax_outside_sdpa(name, tmp_path):
    """One training step (forward + backward) of each objective: every attention call
    reaches SDPA once, and no softmax runs at an attention call site (fairseq's
    ``multihead_attention.py`` / torch's ``multi_head_attention_forward``). The softmaxes
    left are not attention: dwa's pointer network (``pointer_network.py``, eq. of the
    forward/backward pointers over words) and alignment labelling (Sinkhorn/itermax in
    ``alignment/``)."""
    d = toy_dictionary()
    model = build("veco_tiny", d, seed=0, dropout=0.1, attention_dropout=0.1)  # as trained
    criterion = table_criterion(name, d, tmp_path)
    criterion.extend_model(model)
    model.train()
    sample = {"mono": pair_batch(d, seed=0), "bi": pair_batch(d, seed=1)}
    if WORD_ALIGNMENTS in objective(name).needs:
        sample["bi"]["links"] = diagonal_links(sample["bi"])
    calls = attention_calls(model)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=True) as prof:
        loss, _, _ = criterion(model, sample)
        loss.backward()
    sdpa = sum(e.name == "aten::scaled_dot_product_attention" for e in prof.events())
    assert sum(calls.values()) > 0 and sdpa == sum(calls.values()), (sdpa, calls)
    for shape, frames in softmax_sites(prof):
        assert not any(site in f for f in frames for site in ATTENTION_SITES), (shape, frames)
        assert any(site in f for f in frames for site in OTHER_SOFTMAX_SITES), (shape, frames)


def test_the_softmax_check_sees_fairseq_attention():
    """The check above on today's path: the cross-attention's softmax, (N*H, T, S)."""
    d = toy_dictionary()
    model = fairseq_attention(build("veco_tiny", d))
    tokens = random_tokens(d, 4, 12, pad_tail=4)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=True) as prof:
        stream_logits(model, tokens)
    sites = softmax_sites(prof)
    assert [shape for shape, _ in sites] == [[[16, 12, 12]]] * 2  # 2 layers, 4 heads
    assert all(any(ATTENTION_SITES[0] in f for f in frames) for _, frames in sites)


@pytest.mark.parametrize("generate", [False, True])
def test_every_nmt_attention_call_reaches_sdpa(generate):
    """veco_transformer's encoder self-attention, decoder self-attention and
    encoder-decoder attention, in a training step and in beam search (incremental
    state, beamable encoder attention)."""
    d = toy_dictionary()
    nmt = build_nmt(d)
    src, tgt = random_tokens(d, 3, 9, pad_tail=2), random_tokens(d, 3, 7, seed=1)
    calls = attention_calls(nmt)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:  # no stacks:
        if generate:  # torch's profiler fails to decode some of beam search's frames
            nmt.eval().make_generation_fast_(beamable_mm_beam_size=4, need_attn=False)
            sample = {"net_input": {"src_tokens": src, "src_lengths": src.ne(d.pad()).sum(1)}}
            with torch.no_grad():
                SequenceGenerator([nmt], d, beam_size=4, max_len_b=6).generate([nmt], sample)
        else:
            nmt.train()(src, src.ne(d.pad()).sum(1), tgt)[0].sum().backward()
    sdpa = sum(e.name == "aten::scaled_dot_product_attention" for e in prof.events())
    kinds = {name.rsplit(".", 1)[-1] for name in calls}
    assert kinds == {"self_attn", "encoder_attn"} and sdpa == sum(calls.values()), (sdpa, calls)
    assert not softmax_sites(prof)  # beam search's output distribution is a log_softmax
