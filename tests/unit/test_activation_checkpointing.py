"""``--checkpoint-activations`` / ``--offload-activations`` on ``veco`` cover both
streams: the same losses and gradients as without, recomputed in the backward."""

import pytest
import torch

from tests.helpers.runner import USER_DIR, train_cfg
from tests.helpers.toy import ToyTask, build, pair_batch, toy_dictionary
from veco_plugin.objectives import build_criterion


def _loss_and_grads(d, batch, **flags):
    model = build("veco_tiny", d, seed=5, dropout=0.1, attention_dropout=0.1, **flags)
    criterion = build_criterion("ca_mlm", ToyTask(d))
    torch.manual_seed(0)  # the same dropout draws
    loss, _, _ = criterion(model, {"mono": batch, "bi": batch})
    loss.backward()
    return loss.detach(), {n: p.grad for n, p in model.named_parameters()}, model


@pytest.mark.parametrize("offload", [False, True])
def test_checkpointed_layers_give_the_same_gradients(offload):
    d = toy_dictionary()
    batch = pair_batch(d)
    loss, grads, _ = _loss_and_grads(d, batch)
    flags = {"checkpoint_activations": True, "offload_activations": offload}
    loss_ckpt, grads_ckpt, model = _loss_and_grads(d, batch, **flags)
    layers = model.encoder.sentence_encoder.layers
    assert all(hasattr(layer, "precheckpoint_forward") for layer in layers)
    assert torch.equal(loss, loss_ckpt)  # the forward's ops are the same: exact
    cross = [n for n in grads if ".cross_attn" in n]
    assert cross and all(grads[n] is not None for n in cross)  # the S stream ran through it
    for name, grad in grads.items():
        torch.testing.assert_close(grads_ckpt[name], grad, rtol=1e-6, atol=1e-7, msg=name)


def test_fairseq_train_takes_the_flags(tmp_path):
    """fairseq's RoBERTa reads both settings but has no flag for them: veco adds them."""
    (tmp_path / "dict.txt").write_text("a 1\n")
    args = [tmp_path, "--user-dir", USER_DIR, "--task", "veco_pretraining", "--mono-langs", "en"]
    args += ["--arch", "veco_large", "--criterion", "ca_mlm", "--max-tokens", "64"]
    cfg = train_cfg([*args, "--checkpoint-activations", "--offload-activations"])
    assert cfg.model.checkpoint_activations and cfg.model.offload_activations
    assert not getattr(train_cfg(args).model, "checkpoint_activations", False)
