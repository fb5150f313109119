"""``--optimizer veco_adamw``: fairseq's adam flags, torch's fused AdamW, fairseq's update."""

import pytest
import torch
from fairseq import utils as fairseq_utils
from fairseq.optim import OPTIMIZER_REGISTRY
from omegaconf import OmegaConf
from torch.utils._python_dispatch import TorchDispatchMode

from veco_plugin.errors import VecoUserError
from veco_plugin.optim.veco_adamw import VecoAdamW, VecoAdamWConfig


def config(**settings):
    cfg = OmegaConf.structured(VecoAdamWConfig(tpu=False, lr=[1e-2], **settings))
    cfg.adam_betas = "(0.9, 0.98)"
    return cfg


def trained(optimizer_cls, cfg, steps=5):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(), torch.nn.Linear(8, 2))
    optimizer = optimizer_cls(cfg, list(model.parameters()))
    data = torch.randn(16, 8)
    for _ in range(steps):
        optimizer.zero_grad()
        model(data).pow(2).mean().backward()
        optimizer.step()
    return model, optimizer


def test_registered_with_fairseqs_adam_settings():
    assert OPTIMIZER_REGISTRY["veco_adamw"] is VecoAdamW
    _, optimizer = trained(VecoAdamW, config(weight_decay=0.01, adam_eps=1e-6))
    inner = optimizer.optimizer
    assert isinstance(inner, torch.optim.AdamW) and inner.defaults["fused"]
    assert tuple(inner.defaults["betas"]) == (0.9, 0.98)
    assert (inner.defaults["eps"], inner.defaults["weight_decay"]) == (1e-6, 0.01)
    assert optimizer.get_lr() == 1e-2


@pytest.mark.parametrize("eps,tol", [(0.0, 1e-6), (1e-8, 1e-3)])
def test_same_update_as_fairseqs_adam(eps, tol):
    """Decoupled weight decay and bias correction as fairseq's adam: the same update
    without eps; with eps, within a small share of a step (lr 1e-2): the two place
    eps differently (module docstring)."""
    cfg = config(weight_decay=0.1, adam_eps=eps)
    mine, _ = trained(VecoAdamW, cfg)
    theirs, _ = trained(OPTIMIZER_REGISTRY["adam"], cfg)  # no apex, no CUDA: fairseq's Adam
    for a, b in zip(mine.parameters(), theirs.parameters()):
        torch.testing.assert_close(a, b, atol=tol * 1e-2, rtol=1e-5)


def test_state_round_trip():
    _, optimizer = trained(VecoAdamW, config())
    state = optimizer.state_dict()
    _, fresh = trained(VecoAdamW, config(), steps=0)
    fresh.load_state_dict(state)
    assert fresh.state_dict()["state"].keys() == state["state"].keys()


@pytest.mark.parametrize("flag", ["fp16_adam_stats", "use_old_adam"])
def test_fairseq_adam_only_settings_are_refused(flag):
    with pytest.raises(VecoUserError, match="use --optimizer adam"):
        trained(VecoAdamW, config(**{flag: True}))


def test_one_flat_tensor_steps_as_the_tensors_it_holds():
    """fairseq's --fp16 steps one flat fp32 copy of every weight (``supports_flat_params``);
    AdamW is elementwise: 20 steps on the flat copy give the per-tensor weights."""
    cfg = config(weight_decay=0.1, adam_eps=1e-6)
    mine, _ = trained(VecoAdamW, cfg, steps=20)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(), torch.nn.Linear(8, 2))
    params = list(model.parameters())
    flat = torch.nn.Parameter(torch.cat([p.detach().flatten() for p in params]))
    optimizer = VecoAdamW(cfg, [flat])
    assert optimizer.supports_flat_params
    data = torch.randn(16, 8)
    for _ in range(20):
        model.zero_grad()
        model(data).pow(2).mean().backward()
        flat.grad = torch.cat([p.grad.flatten() for p in params])
        optimizer.step()
        with torch.no_grad():
            for p, new in zip(params, flat.split([p.numel() for p in params])):
                p.copy_(new.view_as(p))
    for a, b in zip(mine.parameters(), params):
        torch.testing.assert_close(b, a, rtol=1e-6, atol=1e-7)
    with pytest.raises(VecoUserError, match="--fp16-no-flatten-grads"):
        VecoAdamW(config(weight_decay=0.1, no_decay_bias_and_norm=True), [flat])


class Ops(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("max_norm", [0.0, 0.5, 1e6])
def test_clip_grad_norm_is_fairseqs_in_a_few_foreach_operators(max_norm):
    """The norm and the clipped gradients of fairseq's ``clip_grad_norm_`` (fp32, within
    1e-6: the norms are summed in another order), in operators that do not grow with the
    number of tensors."""
    results = []
    for clip in ("ours", "fairseq"):
        torch.manual_seed(0)
        params = [torch.nn.Parameter(torch.randn(n)) for n in range(1, 41)]
        for p in params:
            p.grad = torch.randn_like(p)
        optimizer = VecoAdamW(config(), params)
        with Ops() as ops:
            if clip == "ours":
                norm = optimizer.clip_grad_norm(max_norm)
            else:
                norm = fairseq_utils.clip_grad_norm_(params, max_norm)
        results.append((norm, [p.grad for p in params], ops.count))
    (ours, our_grads, our_ops), (theirs, their_grads, their_ops) = results
    torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=0)
    for a, b in zip(our_grads, their_grads):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
    assert our_ops <= 8 and their_ops >= 2 * len(params), (our_ops, their_ops)
