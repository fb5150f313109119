"""The CA-MLM stop-gradient (paper §2.2): cross terms treat H^L as a constant."""

import torch
import torch.nn.functional as F

from tests.helpers.toy import ToyTask, build, pair_batch, toy_dictionary
from veco_plugin.modules.pair_layout import swap_halves
from veco_plugin.objectives import build_criterion


def _criterion(d, mlm, ca, stop=True):
    return build_criterion(
        "ca_mlm",
        ToyTask(d),
        mlm_weight=mlm,
        ca_weight=ca,
        tlm_weight=0.0,
        no_stop_gradient=not stop,
    )


def _grads(model):
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def test_cross_terms_equal_hand_detached_h():
    d = toy_dictionary()
    model = build("veco_tiny", d, seed=7)
    batch = pair_batch(d)
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
    for name in ours:  # the same module calls on the same tensors: exact
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
    batch = pair_batch(d, seed=1)
    mlm_only = _grad_at_h(model, _criterion(d, 1.0, 0.0), batch)
    both = _grad_at_h(model, _criterion(d, 1.0, 1.0), batch)
    # exact: with the stop-gradient, H^L's gradient is the MLM term's computation alone
    torch.testing.assert_close(both, mlm_only, rtol=0, atol=0)
    # without the stop-gradient the cross terms do reach H^L
    both_no_stop = _grad_at_h(model, _criterion(d, 1.0, 1.0, stop=False), batch)
    assert not torch.allclose(both_no_stop, mlm_only)
