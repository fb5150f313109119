"""Mixed precision: each objective's loss and gradients under autocast equal fp32's within
what the dtype resolves, on every device at hand (bf16 on CPU; bf16 and fp16 on CUDA,
marked ``gpu``). ``veco-align --fp16``: tests/integration/test_align_cli.py.

Tolerances, from the spread over seeds 0-5 of veco_tiny (3 layers) on the toy pairs: the
loss's relative difference under CPU bf16 autocast is at most 7e-5 for ca_mlm and tlm,
and 0.9 % for dwa, whose self-labelled alignments (a discrete optimal-transport
decision) can move with the rounding; the bounds below hold 10x and 3x margins. The
gradients' cosine similarity to fp32's is at least 0.9997.
"""

import pytest
import torch

from tests.helpers.toy import ToyTask, build, pair_batch, toy_dictionary
from veco_plugin.objectives import build_criterion

CUDA = torch.cuda.is_available()
ON_CUDA = pytest.mark.skipif(not CUDA, reason="needs CUDA")
SETTINGS = [
    ("cpu", torch.bfloat16),
    pytest.param("cuda", torch.bfloat16, marks=[pytest.mark.gpu, ON_CUDA]),
    pytest.param("cuda", torch.float16, marks=[pytest.mark.gpu, ON_CUDA]),
]
LOSS_TOLERANCE = {"ca_mlm": 1e-3, "tlm": 1e-3, "dwa": 3e-2}


def _step(name, device, dtype, seed):
    """The loss and the flat gradient of one ``name`` step (autocast to ``dtype``, or
    fp32 when None) on a fresh veco_tiny of ``seed``."""
    d = toy_dictionary()
    model = build("veco_tiny", d, seed=seed, encoder_layers=3)
    if name == "dwa":
        model.build_extension("pointer")
    model.to(device)
    criterion = build_criterion(name, ToyTask(d))
    sample = {"mono": pair_batch(d, seed=2 * seed + 4), "bi": pair_batch(d, seed=2 * seed + 5)}
    sample = {key: _to(batch, device) for key, batch in sample.items()}
    with torch.autocast(device, dtype=dtype or torch.float32, enabled=dtype is not None):
        loss, _, _ = criterion(model, sample)
    loss.backward()
    grads = [p.grad.float().flatten() for p in model.parameters() if p.grad is not None]
    return loss.detach().float().cpu(), torch.cat(grads).cpu()


def _to(batch, device):
    if torch.is_tensor(batch):
        return batch.to(device)
    if isinstance(batch, dict):
        return {key: _to(value, device) for key, value in batch.items()}
    return batch


@pytest.mark.parametrize("device,dtype", SETTINGS, ids=lambda v: str(v).replace("torch.", ""))
@pytest.mark.parametrize("name", sorted(LOSS_TOLERANCE))
def test_autocast_equals_fp32_within_the_dtype(name, device, dtype):
    for seed in (0, 1):
        loss32, grad32 = _step(name, device, None, seed)
        loss, grad = _step(name, device, dtype, seed)
        assert torch.isfinite(loss) and torch.isfinite(grad).all()
        assert abs(float(loss / loss32) - 1) < LOSS_TOLERANCE[name], (float(loss), float(loss32))
        cosine = torch.nn.functional.cosine_similarity(grad, grad32, dim=0)
        assert cosine > 0.998, float(cosine)
