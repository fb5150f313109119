"""Counting what makes the host wait for the device, by the line that asked for it.

:class:`HostWaits` is a ``TorchDispatchMode`` that sees every aten operator: it counts
them all (on CUDA about the kernel launches), and records the data-dependent ones
(``.item()``'s ``_local_scalar_dense``, ``nonzero``, ``masked_select``, ``is_nonzero``,
boolean-mask indexing: their result's size or value needs the device's result) and the
copies from a device to the host, each by the innermost ``veco_plugin`` or fairseq source
line on the stack. ``benchmarks/trainer_speed.py`` counts a whole ``Trainer.train_step``
with it; ``tests/unit/test_host_syncs.py`` a criterion's step.
"""

import os
import traceback
from collections import Counter
from typing import Dict, Optional

import torch
from torch.utils._python_dispatch import TorchDispatchMode

PLUGIN = os.path.join("veco_plugin", "")
aten = torch.ops.aten
DATA_DEPENDENT = (
    aten.nonzero.default,
    aten.masked_select.default,
    aten._local_scalar_dense.default,
    aten.is_nonzero.default,
)


def innermost(frames) -> str:
    """``file:line`` of the innermost ``veco_plugin``/fairseq frame of a stack
    (``traceback`` frames), the path from the package folder on; "?" if none."""
    ours = [f for f in frames if PLUGIN in f.filename or "fairseq" in f.filename]
    if not ours:
        return "?"
    path = ours[-1].filename
    for root in (PLUGIN, f"fairseq{os.sep}", f"fairseq_cli{os.sep}"):
        if root in path:
            path = root + path.rsplit(root, 1)[1]
            break
    return f"{path}:{ours[-1].lineno}"


def _device(device) -> Optional[str]:
    return None if device is None else torch.device(device).type


def _to_host(func, args, kwargs) -> bool:
    if func is aten._to_copy.default:
        return _device(kwargs.get("device")) == "cpu" and args[0].device.type != "cpu"
    if func is aten.copy_.default:
        return args[0].device.type == "cpu" and args[1].device.type != "cpu"
    return False


class HostWaits(TorchDispatchMode):
    """``ops``: operators dispatched; ``calls``: the waits, by ``"file:line"`` of the
    innermost plugin or fairseq frame."""

    def __init__(self):
        super().__init__()
        self.ops = 0
        self.calls: Counter = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.ops += 1
        boolean_index = func is aten.index.Tensor and any(
            i is not None and i.dtype == torch.bool for i in args[1]
        )
        if func in DATA_DEPENDENT or boolean_index or _to_host(func, args, kwargs):
            self.calls[innermost(traceback.extract_stack())] += 1
        return func(*args, **kwargs)

    def plugin_calls(self) -> Dict[str, int]:
        return {k: n for k, n in self.calls.items() if k.startswith(PLUGIN)}
