"""Load fairseq's own checkpoints under torch >= 2.6 (``weights_only=True`` default).

fairseq checkpoints pickle ``argparse.Namespace`` and omegaconf configs, which the
weights-only unpickler rejects. Rather than switching the default off for the whole
process (``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1``), we mark the fairseq functions that
read a checkpoint the user named (or the state that rank 0 read and broadcasts) as
trusted: only ``torch.load`` calls made *inside* them default to full unpickling.
Every other ``torch.load`` keeps torch's default.
"""

import contextlib
import functools
import inspect
import threading

import torch

from ..patching import wrap_once

_state = threading.local()
_torch_load = torch.load


def _supports_weights_only() -> bool:
    return "weights_only" in inspect.signature(_torch_load).parameters


@contextlib.contextmanager
def trusted_checkpoint_loading():
    """Within this block, ``torch.load`` defaults to ``weights_only=False``."""
    depth = getattr(_state, "depth", 0)
    _state.depth = depth + 1
    try:
        yield
    finally:
        _state.depth = depth


def _load(*args, **kwargs):
    if getattr(_state, "depth", 0) > 0:
        kwargs.setdefault("weights_only", False)
    return _torch_load(*args, **kwargs)


def _trusted(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with trusted_checkpoint_loading():
            return fn(*args, **kwargs)

    return wrapper


def load_trusted(path, map_location="cpu"):
    """``torch.load`` of a checkpoint file the user gave us on the command line."""
    with trusted_checkpoint_loading():
        return torch.load(path, map_location=map_location)


def install() -> None:
    """Patch fairseq's checkpoint readers; idempotent, a no-op on torch < 1.13."""
    if not _supports_weights_only():
        return
    from fairseq import checkpoint_utils
    from fairseq.distributed import utils as distributed_utils

    wrap_once(torch, "load", lambda _: _load, "trusted")
    for module, name in (
        (checkpoint_utils, "load_checkpoint_to_cpu"),
        (checkpoint_utils, "load_ema_from_checkpoint"),
        (distributed_utils, "_broadcast_object_slow"),
    ):
        wrap_once(module, name, _trusted, "trusted")
