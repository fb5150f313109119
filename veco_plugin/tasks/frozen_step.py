"""An optimizer step that leaves some parameters untouched, for every optimizer
fairseq builds; used by the cross-attention-only phase of ``veco_pretraining``.

fairseq's optimizers find their parameters by ``requires_grad``: the flat fp32
master buffer of ``FP16Optimizer`` (``--fp16``/``--bf16``) is laid out once, and
its grad/param copies skip parameters whose ``requires_grad`` is off, so flipping
the flag after the optimizer is built shifts gradients into other parameters'
slots. Here nothing is flipped: the frozen parameters lose their gradients (every
optimizer skips a parameter without one: no update, no weight decay, no state),
and inside a flat master buffer, where that cannot be said per parameter, their
slots are put back after the step.
"""

from collections import defaultdict
from typing import Dict, List, Sequence

import torch
from fairseq.optim.fp16_optimizer import FP16Optimizer
from torch import Tensor


def master_copies(optimizer, params: Sequence[Tensor]) -> List[Tensor]:
    """The fp32 master copy (a view into the flat buffer, or the per-parameter
    copy) of each of ``params`` in fairseq's ``FP16Optimizer``; [] for others."""
    if not isinstance(optimizer, FP16Optimizer):
        return []
    if not optimizer.has_flat_params:
        own = {id(p): p32 for p, p32 in zip(optimizer.fp16_params, optimizer.fp32_params)}
        return [own[id(p)] for p in params]
    # build_fp32_params' layout: fp16_params in order, one flat buffer per device
    views: Dict[int, Tensor] = {}
    offsets: Dict[object, int] = defaultdict(int)
    for p in optimizer.fp16_params:
        device, start = p.device.index, offsets[p.device.index]
        flat = optimizer.fp32_params[device].data
        views[id(p)] = flat[start : start + p.numel()].view_as(p)
        offsets[device] = start + p.numel()
    return [views[id(p)] for p in params]


def step_leaving_untouched(optimizer, frozen: Sequence[Tensor]) -> None:
    """``optimizer.step()`` after which ``frozen`` (model parameters), their master
    copies and their optimizer state are bit-identical to before."""
    for p in frozen:
        p.grad = None
    masters = master_copies(optimizer, frozen)
    flat = bool(masters) and optimizer.has_flat_params
    if masters and not flat:
        for p32 in masters:
            p32.grad = None
    saved = [p.detach().clone() for p in frozen] if flat else []
    optimizer.step()
    with torch.no_grad():
        for p, master, value in zip(frozen, masters, saved):
            p.copy_(value)
            master.copy_(value)
