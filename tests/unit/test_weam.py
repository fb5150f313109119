"""``weam``'s cross-lingual prediction (WEAM eqs. 5-8, 10) against a hand computation."""

import pytest
import torch
import torch.nn.functional as F

from tests.helpers.toy import ToyTask, build, diagonal_links, pair_batch, toy_dictionary
from veco_plugin.errors import VecoUserError
from veco_plugin.models.requests import PlugOut
from veco_plugin.objectives import build_criterion


def _setup(seed=0):
    d = toy_dictionary()
    model = build("veco_tiny", d, seed=seed).eval()
    criterion = build_criterion("weam", ToyTask(d))
    criterion.extend_model(model)
    return d, model, criterion


def _by_hand(model, batch, links):
    """Σ -log p~(w_i) over masked pieces with a partner, pair by pair."""
    concat, target = batch["concat_tokens"], batch["concat_target"]
    out = model(requests={"h": PlugOut(concat, layers=(2,))})
    hidden = out["h"].hidden[2]  # (B, T, C)
    head, exchange = model.encoder.lm_head, model.exchange
    loss, count = torch.zeros(()), 0
    for b, first in enumerate(batch["first_lengths"].tolist()):
        for i in range(links.size(1)):
            for side in "xy":
                if side == "x":
                    partners = links[b, i].nonzero().flatten()
                    position, reads = i, [first + j for j in partners.tolist()]
                else:
                    partners = links[b, :, i].nonzero().flatten()
                    position, reads = first + i, partners.tolist()
                gold = target[b, position]
                if not reads or gold == 1:  # unlinked or not masked (pad = 1)
                    continue
                summed = hidden[b, reads].sum(0)  # eq. 5, A^T H
                logits = F.linear(head.layer_norm(exchange(summed)), head.weight) + head.bias
                loss = loss + F.cross_entropy(logits[None], gold[None])
                count += 1
    return loss, count


def test_cross_prediction_is_eqs_5_to_8_pair_by_pair():
    d, model, criterion = _setup()
    batch = pair_batch(d, seed=3)
    batch["links"] = diagonal_links(batch, many_to_one=True)
    _, _, log = criterion(model, {"bi": batch})
    loss, count = _by_hand(model, batch, batch["links"])
    assert count > 0 and int(log["bi_cp_n"]) == count
    torch.testing.assert_close(log["bi_cp_loss"], loss.detach(), rtol=1e-5, atol=1e-5)


def test_unlinked_pairs_give_a_zero_term_not_nan():
    d, model, criterion = _setup()
    batch = pair_batch(d, seed=4)
    batch["links"] = torch.zeros_like(diagonal_links(batch))
    loss, _, log = criterion(model.train(), {"bi": batch})
    loss.backward()
    assert float(log["bi_cp_loss"]) == 0.0 and int(log["bi_cp_n"]) == 0
    assert torch.isfinite(loss)
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_the_exchange_head_learns_and_the_loss_is_mp_plus_lambda_cp():
    d = toy_dictionary()
    model = build("veco_tiny", d, seed=0).eval()
    criterion = build_criterion("weam", ToyTask(d), cp_weight=0.5)
    criterion.extend_model(model)
    batch = pair_batch(d, seed=5)
    batch["links"] = diagonal_links(batch)
    loss, _, log = criterion(model, {"bi": batch})
    torch.testing.assert_close(loss.detach(), log["bi_tlm_loss"] + 0.5 * log["bi_cp_loss"])
    loss.backward()
    assert model.exchange.exchange_proj.weight.grad.abs().sum() > 0


def test_bilingual_data_without_alignments_is_one_line():
    d, model, criterion = _setup()
    with pytest.raises(VecoUserError, match="needs word alignments"):
        criterion(model, {"bi": pair_batch(d)})


def test_bf16_model_gives_a_finite_loss_and_gradients():
    d = toy_dictionary()
    model = build("veco_tiny", d, seed=0).to(torch.bfloat16)
    criterion = build_criterion("weam", ToyTask(d))
    criterion.extend_model(model)
    model.to(torch.bfloat16)
    batch = pair_batch(d, seed=6)
    batch["links"] = diagonal_links(batch, many_to_one=True)
    loss, _, log = criterion(model, {"bi": batch})
    loss.backward()
    assert torch.isfinite(loss) and int(log["bi_cp_n"]) > 0
    assert torch.isfinite(model.exchange.dense.weight.grad.float()).all()
