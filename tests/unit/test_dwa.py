"""The ``dwa`` criterion (XLM-Align, Algorithm 1) against the equations, pair by pair."""

import math

import pytest
import torch
import torch.nn.functional as F

from tests.helpers.toy import ToyTask, build, pair_batch, toy_dictionary
from veco_plugin.alignment import self_label
from veco_plugin.models.requests import PlugOut
from veco_plugin.objectives import build_criterion
from veco_plugin.terms.word_alignment import DenoisingAlignmentTerm

LAYERS = 3


def _model(d, **overrides):
    model = build("veco_tiny", d, seed=0, encoder_layers=LAYERS, **overrides)
    model.build_extension("pointer")
    return model


def _criterion(d, **cfg):
    return build_criterion("dwa", ToyTask(d), **cfg)


def test_pointer_network_is_eqs_11_to_13():
    d = toy_dictionary()
    pointer = _model(d).pointer
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(2, 5, 64, generator=g), torch.randn(2, 5, 64, generator=g)
    x_real = torch.tensor([[0, 1, 1, 1, 0], [0, 1, 1, 0, 0]], dtype=torch.bool)
    y_real = torch.tensor([[0, 1, 1, 1, 1], [0, 1, 0, 0, 0]], dtype=torch.bool)
    forward, backward = pointer(x, y, x_real, y_real)
    for b in range(2):
        q = F.linear(x[b], pointer.q_proj.weight, pointer.q_proj.bias)  # eq. 12
        k = F.linear(y[b, y_real[b]], pointer.k_proj.weight, pointer.k_proj.bias)  # eq. 13
        a = torch.softmax(q @ k.T / math.sqrt(64), -1)  # eq. 11
        torch.testing.assert_close(forward[b][:, y_real[b]].exp(), a)
        assert forward[b][:, ~y_real[b]].exp().sum() == 0
        q = F.linear(y[b], pointer.q_proj.weight, pointer.q_proj.bias)
        k = F.linear(x[b, x_real[b]], pointer.k_proj.weight, pointer.k_proj.bias)
        torch.testing.assert_close(
            backward[b][:, x_real[b]].exp(), torch.softmax(q @ k.T / math.sqrt(64), -1)
        )


def _by_hand(model, d, batch, label_layer, dwa_layer):
    """Algorithm 1 for each pair alone (no padding): labels from the unmasked pair in
    eval mode, pointer on the masked pair, CE of eqs. 14-15 in both directions."""
    pad = d.pad()
    loss, links_total, labels_total = 0.0, 0, 0
    for b in range(batch["concat_tokens"].size(0)):
        row = batch["concat_tokens"][b]
        keep = row.ne(pad)
        masked_in, target = row[keep], batch["concat_target"][b][keep]
        clean = torch.where(target.ne(pad), target, masked_in)
        lx = int(batch["first_lengths"][b])
        src = torch.arange(1, lx - 1)  # word pieces of x (not <s>, </s>)
        tgt = torch.arange(lx + 1, len(clean) - 1)
        model.eval()
        with torch.no_grad():
            out = model(requests={"h": PlugOut(clean[None], layers=(label_layer,))})
        h = out["h"].hidden[label_layer][0]
        links = self_label(h[src][None], h[tgt][None], torch.ones(1, len(src), dtype=torch.bool),
                           torch.ones(1, len(tgt), dtype=torch.bool))[0]  # fmt: skip
        model.train()
        out = model(requests={"h": PlugOut(masked_in[None], layers=(dwa_layer,))})
        h = out["h"].hidden[dwa_layer][0]
        p = model.pointer
        q, k = p.q_proj(h), p.k_proj(h)
        fwd = torch.log_softmax(q[src] @ k[tgt].T / math.sqrt(h.size(-1)), -1)
        bwd = torch.log_softmax(q[tgt] @ k[src].T / math.sqrt(h.size(-1)), -1)
        x_masked, y_masked = target[src].ne(pad), target[tgt].ne(pad)
        fwd_labels = links & x_masked[:, None]
        bwd_labels = links.T & y_masked[:, None]
        loss = loss - fwd[fwd_labels].sum() - bwd[bwd_labels].sum()
        links_total += int(links.sum())
        labels_total += int(fwd_labels.sum() + bwd_labels.sum())
    return loss, links_total, labels_total


def test_dwa_term_is_algorithm_1_pair_by_pair():
    d = toy_dictionary()
    model = _model(d)
    batch = pair_batch(d)
    criterion = _criterion(d)
    _, _, log = criterion(model, {"bi": batch})
    (term,) = [t for t in criterion.terms if isinstance(t, DenoisingAlignmentTerm)]
    layers = term.resolve_layers(LAYERS)
    assert layers == {"label": 2, "dwa": 3}  # round(3 * 10/12), the last
    loss, links, labels = _by_hand(model, d, batch, layers["label"], layers["dwa"])
    assert labels > 0
    torch.testing.assert_close(log["bi_dwa_loss"], loss.detach(), rtol=1e-5, atol=1e-5)
    assert int(log["dwa_links"]) == links and int(log["bi_dwa_n"]) == labels


def test_labels_see_neither_dropout_nor_masks():
    """Self-labelling runs without dropout on the unmasked pair: the same links in
    training mode with dropout as in eval mode, and no gradient through them."""
    d = toy_dictionary()
    model = _model(d, dropout=0.3, attention_dropout=0.3)
    batch = pair_batch(d, seed=1)
    criterion = _criterion(d)
    model.train()
    _, _, log = criterion(model, {"bi": batch})
    _, links, _ = _by_hand(model, d, batch, 2, 3)
    assert int(log["dwa_links"]) == links


def test_every_term_and_the_label_statistics_are_logged():
    d = toy_dictionary()
    model = _model(d)
    loss, sample_size, log = _criterion(d)(
        model, {"mono": pair_batch(d, seed=2), "bi": pair_batch(d, seed=3)}
    )
    loss.backward()
    assert {"mono_mlm_loss", "bi_tlm_loss", "bi_dwa_loss", "dwa_labelled", "dwa_masked"} <= set(log)
    assert 0 < int(log["dwa_labelled"]) <= int(log["dwa_masked"])
    assert model.pointer.q_proj.weight.grad.abs().sum() > 0
    assert all(p.grad is None for p in model.cross_attention_parameters())


@pytest.mark.parametrize("flag,value", [("label_layer", 4), ("dwa_layer", 0)])
def test_layers_out_of_range_are_refused(flag, value):
    from veco_plugin.errors import VecoUserError

    d = toy_dictionary()
    with pytest.raises(VecoUserError, match="the model has layers 1..3"):
        _criterion(d, **{flag: value})(_model(d), {"bi": pair_batch(d)})


def test_bf16_model_gives_a_finite_loss():
    d = toy_dictionary()
    model = _model(d).to(torch.bfloat16)
    loss, _, log = _criterion(d)(
        model, {"mono": pair_batch(d, seed=4), "bi": pair_batch(d, seed=5)}
    )
    assert torch.isfinite(loss) and int(log["dwa_links"]) > 0
    loss.backward()
