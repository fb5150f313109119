"""Averaging the parameters of fairseq checkpoints (``veco-average-checkpoints``).

Every floating-point tensor of ``state["model"]`` becomes the mean of the inputs,
accumulated in float64 and cast back to the input dtype (so a float32 result is the
correctly rounded exact mean). Non-floating tensors (integer buffers such as
``version``) are taken from the newest checkpoint. All other entries (``cfg``,
``args``, ``extra_state``, optimizer history) are those of the newest checkpoint,
the one with the highest update count, so ``fairseq-generate --path`` loads the
result exactly as it loads a training checkpoint. ``--no-optimizer-state`` drops the
(large, and meaningless once averaged) optimizer state.

All inputs must come from the same architecture with identical parameter names and
shapes; otherwise the tool exits with a one-line error naming the two files. The
output is written atomically (``<output>.tmp`` then rename).
"""

from __future__ import annotations

import logging
import os
import re
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from .config import cfg_value, checkpoint_model_cfg

logger = logging.getLogger("veco_plugin.cli.average_checkpoints")

_UPDATE_CKPT = re.compile(r"^checkpoint_(\d+)_(\d+)\.pt$")
_EPOCH_CKPT = re.compile(r"^checkpoint(\d+)\.pt$")


class AverageError(Exception):
    """A problem with the inputs, reported to the user as one line."""


def select_checkpoints(
    directory: str,
    num: int,
    kind: str,
    upper_bound: Optional[int] = None,
) -> List[str]:
    """The ``num`` newest ``kind`` ("update" or "epoch") checkpoints of ``directory``.

    Returned oldest first. Warns (does not fail) when fewer than ``num`` exist.
    """
    if not os.path.isdir(directory):
        raise AverageError(f"{directory} is not a directory")
    pattern = _UPDATE_CKPT if kind == "update" else _EPOCH_CKPT
    found: List[Tuple[int, str]] = []
    for name in os.listdir(directory):
        m = pattern.match(name)
        if m is None:
            continue
        # update checkpoints sort by update count (group 2), epoch ones by epoch
        key = int(m.group(m.lastindex or 0))
        if upper_bound is not None and key > upper_bound:
            continue
        found.append((key, os.path.join(directory, name)))
    found.sort()
    if not found:
        bound = f" with {kind} <= {upper_bound}" if upper_bound is not None else ""
        raise AverageError(f"no {kind} checkpoints{bound} in {directory}")
    if len(found) < num:
        logger.warning(
            "asked for %d %s checkpoints but found only %d in %s; averaging those %d",
            num,
            kind,
            len(found),
            directory,
            len(found),
        )
    return [path for _, path in found[-num:]]


def checkpoint_arch(state: Dict[str, Any]) -> Optional[str]:
    """Architecture name in a checkpoint (``args.arch`` or ``cfg.model._name``)."""
    model_cfg = checkpoint_model_cfg(state)
    for key in ("arch", "_name"):
        value = cfg_value(model_cfg, key)
        if value:
            return str(value)
    return None


def num_updates(state: Dict[str, Any]) -> int:
    history = state.get("optimizer_history") or []
    if history and "num_updates" in history[-1]:
        return int(history[-1]["num_updates"])
    return -1


def check_compatible(states: Sequence[Dict[str, Any]], paths: Sequence[str]) -> None:
    """Raise :class:`AverageError` unless all share arch, parameter names and shapes."""
    ref_arch = checkpoint_arch(states[0])
    ref_params = states[0]["model"]
    for state, path in zip(states[1:], paths[1:]):
        arch = checkpoint_arch(state)
        if arch != ref_arch:
            raise AverageError(
                f"cannot average different architectures: {paths[0]} is {ref_arch!r}, "
                f"{path} is {arch!r}"
            )
        params = state["model"]
        if params.keys() != ref_params.keys():
            diff = sorted(set(params.keys()) ^ set(ref_params.keys()))
            raise AverageError(
                f"cannot average: {paths[0]} and {path} have different parameters "
                f"({len(diff)} differ, e.g. {diff[0]})"
            )
        for name, tensor in params.items():
            if tuple(tensor.shape) != tuple(ref_params[name].shape):
                raise AverageError(
                    f"cannot average: {name} has shape {tuple(ref_params[name].shape)} "
                    f"in {paths[0]} but {tuple(tensor.shape)} in {path}"
                )


def average_states(states: Sequence[Dict[str, Any]], paths: Sequence[str]) -> Dict[str, Any]:
    """A new checkpoint: averaged ``model``, everything else from the newest input."""
    if not states:
        raise AverageError("no checkpoints to average")
    for state, path in zip(states, paths):
        if "model" not in state:
            raise AverageError(f"{path} has no 'model' entry; not a fairseq checkpoint")
    check_compatible(states, paths)
    # newest = highest update count; ties go to the later input
    newest = max(range(len(states)), key=lambda i: (num_updates(states[i]), i))

    averaged: "OrderedDict[str, torch.Tensor]" = OrderedDict()
    for name, ref in states[newest]["model"].items():
        if not torch.is_floating_point(ref):
            averaged[name] = ref.clone()
            continue
        acc = torch.zeros(ref.shape, dtype=torch.float64)
        for state in states:
            acc += state["model"][name].to(dtype=torch.float64, device="cpu")
        averaged[name] = (acc / len(states)).to(ref.dtype)

    out = dict(states[newest])
    out["model"] = averaged
    return out


def load_states(paths: Sequence[str]) -> List[Dict[str, Any]]:
    from .trusted_load import load_trusted

    states = []
    for path in paths:
        if not os.path.isfile(path):
            raise AverageError(f"{path}: no such checkpoint file")
        try:
            states.append(load_trusted(path, map_location="cpu"))
        except Exception as exc:  # corrupt or truncated file
            raise AverageError(f"{path}: cannot load checkpoint ({exc})") from exc
    return states
