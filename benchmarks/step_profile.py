"""Where one training update's time goes: ``torch.profiler`` over a few updates, the
device's busy time split by kind of work, and how much of the wall time the device was
busy at all (the rest: the host launching kernels, or waiting).

On CUDA the kinds are read off the kernels' names (cuBLAS/CUTLASS GEMMs, flash and
memory-efficient attention, the optimizer's multi-tensor kernels...); on the CPU off
the aten operators (self time), where ``busy`` is the operators' share of the wall
time. ``run.py --profile`` prints them per variant (``<variant>_profile`` in its JSON).
"""

import re
import time
from typing import Callable, Dict

import torch
from torch.profiler import ProfilerActivity, profile

# first match wins; a kernel or operator matching none is "other"
KINDS = (
    ("attention", re.compile(r"flash|fmha|attention|efficient|sdpa", re.I)),
    ("matmul", re.compile(r"gemm|nvjet|cutlass|xmma|cublas|aten::(mm|addmm|bmm|matmul)$", re.I)),
    ("optimizer", re.compile(r"multi_tensor|adam|_foreach", re.I)),
    ("softmax_loss", re.compile(r"softmax|nll|cross_entropy", re.I)),
    ("norm", re.compile(r"layer_?norm", re.I)),
    ("embedding_index", re.compile(r"embedding|index|scatter|gather|nonzero|sort", re.I)),
)


def kind_of(name: str) -> str:
    return next((kind for kind, pattern in KINDS if pattern.search(name)), "other")


def profile_updates(update: Callable[[], None], device: str, steps: int = 3) -> Dict[str, float]:
    """``steps`` calls of ``update`` (after one warm-up) under the profiler ->
    ``{"busy": share of the wall time the device worked, "<kind>": share of that work,
    "ms_per_update": wall ms}``."""
    cuda = device.startswith("cuda")
    update()
    if cuda:
        torch.cuda.synchronize()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        start = time.perf_counter()
        for _ in range(steps):
            update()
        if cuda:
            torch.cuda.synchronize()
        wall = time.perf_counter() - start
    work: Dict[str, float] = {}
    for event in prof.key_averages():
        if cuda:
            if event.device_type != torch.autograd.DeviceType.CUDA:
                continue
            spent = event.self_device_time_total
        else:
            if not event.key.startswith("aten::"):
                continue
            spent = event.self_cpu_time_total
        work[kind_of(event.key)] = work.get(kind_of(event.key), 0.0) + spent
    total = sum(work.values())  # microseconds
    shares = {kind: spent / total for kind, spent in sorted(work.items())} if total else {}
    return {"busy": total / 1e6 / wall, "ms_per_update": 1e3 * wall / steps, **shares}
