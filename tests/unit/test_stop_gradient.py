"""The CA-MLM stop-gradient (paper §2.2): cross terms treat H^L as a constant."""

import numpy as np
import torch
import torch.nn.functional as F
from fairseq.data import ListDataset
from toy import ToyTask, build, toy_dictionary

from veco_plugin.criterions.ca_mlm import CaMlmCriterion
from veco_plugin.data.masking import MaskingScheme
from veco_plugin.data.pair_dataset import VecoPairDataset
from veco_plugin.models.veco import swap_halves


def pair_dataset(d, n_pairs=6, seed=0) -> VecoPairDataset:
    """Random translation pairs of 4-12 tokens, masked at 30%."""
    rng = np.random.default_rng(seed)
    lines = [
        torch.from_numpy(
            np.append(rng.integers(d.nspecial, len(d) - 1, rng.integers(4, 12)), d.eos())
        )
        for _ in range(n_pairs)
    ]
    corpus = ListDataset(lines, np.array([len(t) for t in lines]))
    scheme = MaskingScheme(0.3, d.index("<mask>"), d.pad(), d.nspecial, len(d))
    return VecoPairDataset.parallel(
        corpus, corpus, name="t", bos=d.bos(), max_len=32, scheme=scheme
    )


def _batch(d, n_pairs=6, seed=0):
    ds = pair_dataset(d, n_pairs, seed)
    return ds.collater([ds[i] for i in range(len(ds))])


def _criterion(d, mlm, ca, stop=True):
    return CaMlmCriterion(ToyTask(d), mlm, ca, 0.0, not stop, False)


def _grads(model):
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def test_cross_terms_equal_hand_detached_h():
    d = toy_dictionary()
    model = build("veco_tiny", d, seed=7)
    batch = _batch(d)
    loss, _, _ = _criterion(d, 0.0, 1.0)(model, {"bi": batch})
    loss.backward()
    ours = _grads(model)
    model.zero_grad(set_to_none=True)

    enc = model.encoder.sentence_encoder
    tokens, target = batch["pair_tokens"], batch["pair_target"]
    h = enc(tokens)["encoder_out"][0].detach()  # H^L detached by hand
    s, _ = enc.forward_stream(tokens, swap_halves(h, 1), swap_halves(tokens.eq(d.pad()), 0))
    masked = target.ne(d.pad())
    logits = model.encoder.output_layer(s.transpose(0, 1), masked)
    F.cross_entropy(logits, target[masked], reduction="sum").backward()
    by_hand = _grads(model)

    assert ours.keys() == by_hand.keys()
    for name in ours:
        torch.testing.assert_close(ours[name], by_hand[name], rtol=0, atol=0, msg=name)


def _grad_at_h(model, criterion, batch):
    captured = {}

    def keep(module, args, kwargs, out):
        if "memory" not in kwargs:  # the last plug-out layer: H^L
            out.retain_grad()
            captured["h"] = out

    last = model.encoder.sentence_encoder.layers[-1]
    handle = last.register_forward_hook(keep, with_kwargs=True)
    loss, _, _ = criterion(model, {"mono": batch})
    loss.backward()
    handle.remove()
    model.zero_grad(set_to_none=True)
    return captured["h"].grad


def test_no_gradient_reaches_h_through_cross_terms():
    d = toy_dictionary()
    model = build("veco_tiny", d, seed=8)
    batch = _batch(d, seed=1)
    mlm_only = _grad_at_h(model, _criterion(d, 1.0, 0.0), batch)
    both = _grad_at_h(model, _criterion(d, 1.0, 1.0), batch)
    torch.testing.assert_close(both, mlm_only, rtol=0, atol=0)
    # without the stop-gradient the cross terms do reach H^L
    both_no_stop = _grad_at_h(model, _criterion(d, 1.0, 1.0, stop=False), batch)
    assert not torch.allclose(both_no_stop, mlm_only)
