"""Average the parameters of several fairseq checkpoints into one loadable checkpoint.

::

    veco-average-checkpoints --inputs checkpoints/wmt14_en_de \\
        --num-update-checkpoints 10 --output checkpoints/wmt14_en_de/averaged.pt
    veco-average-checkpoints --inputs a.pt b.pt c.pt --output avg.pt

Selection
    ``--inputs`` is either a list of checkpoint files, or one directory together with
    ``--num-update-checkpoints N`` (the ``checkpoint_<epoch>_<update>.pt`` files with
    the N highest update counts) or ``--num-epoch-checkpoints N`` (the
    ``checkpoint<epoch>.pt`` files with the N highest epochs).
    ``--checkpoint-upper-bound B`` ignores update (or epoch) numbers above B. When fewer
    than N files exist, a warning says how many were found and those are averaged.

Averaging
    Every floating-point tensor of ``state["model"]`` becomes the mean of the inputs,
    accumulated in float64 and cast back to the input dtype (so a float32 result is the
    correctly rounded exact mean). Non-floating tensors (integer buffers such as
    ``version``) are taken from the newest checkpoint. All other entries (``cfg``,
    ``args``, ``extra_state``, optimizer history) are those of the newest checkpoint,
    the one with the highest update count, so ``fairseq-generate --path`` loads the
    result exactly as it loads a training checkpoint. ``--no-optimizer-state`` drops the
    (large, and meaningless once averaged) optimizer state.

Checks
    All inputs must come from the same architecture with identical parameter names and
    shapes; otherwise the tool exits with a one-line error naming the two files. The
    output is written atomically (``<output>.tmp`` then rename).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from .common import cfg_value, checkpoint_model_cfg, run_cli
from .output import check_output, save_checkpoint

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
    from veco_plugin.trusted_load import load_trusted

    states = []
    for path in paths:
        if not os.path.isfile(path):
            raise AverageError(f"{path}: no such checkpoint file")
        try:
            states.append(load_trusted(path, map_location="cpu"))
        except Exception as exc:  # corrupt or truncated file
            raise AverageError(f"{path}: cannot load checkpoint ({exc})") from exc
    return states


def resolve_inputs(args: argparse.Namespace) -> List[str]:
    if args.num_update_checkpoints and args.num_epoch_checkpoints:
        raise AverageError("give --num-update-checkpoints or --num-epoch-checkpoints, not both")
    num = args.num_update_checkpoints or args.num_epoch_checkpoints
    if num:
        if len(args.inputs) != 1 or not os.path.isdir(args.inputs[0]):
            raise AverageError(
                "--num-update-checkpoints/--num-epoch-checkpoints need exactly one "
                "directory in --inputs"
            )
        kind = "update" if args.num_update_checkpoints else "epoch"
        return select_checkpoints(args.inputs[0], num, kind, args.checkpoint_upper_bound)
    if args.checkpoint_upper_bound is not None:
        raise AverageError(
            "--checkpoint-upper-bound needs --num-update-checkpoints or " "--num-epoch-checkpoints"
        )
    for path in args.inputs:
        if os.path.isdir(path):
            raise AverageError(
                f"{path} is a directory: add --num-update-checkpoints N or "
                "--num-epoch-checkpoints N, or list checkpoint files"
            )
    return list(args.inputs)


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="veco-average-checkpoints",
        description="Average the parameters of fairseq checkpoints (last N by update "
        "or epoch, or an explicit list) into one checkpoint fairseq-generate can load.",
    )
    parser.add_argument(
        "--inputs",
        required=True,
        nargs="+",
        metavar="PATH",
        help="checkpoint files, or one directory with --num-*-checkpoints",
    )
    parser.add_argument("--output", required=True, metavar="FILE", help="output file")
    parser.add_argument(
        "--num-update-checkpoints",
        type=int,
        metavar="N",
        help="average the N checkpoint_<epoch>_<update>.pt with the highest updates",
    )
    parser.add_argument(
        "--num-epoch-checkpoints",
        type=int,
        metavar="N",
        help="average the N checkpoint<epoch>.pt with the highest epochs",
    )
    parser.add_argument(
        "--checkpoint-upper-bound",
        type=int,
        metavar="N",
        help="ignore checkpoints whose update (or epoch) number is above N",
    )
    parser.add_argument(
        "--no-optimizer-state",
        action="store_true",
        help="drop last_optimizer_state from the output (smaller file)",
    )
    return parser


def main(args: argparse.Namespace) -> Dict[str, Any]:
    for flag in ("num_update_checkpoints", "num_epoch_checkpoints"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            raise AverageError(f"--{flag.replace('_', '-')} must be >= 1")
    paths = resolve_inputs(args)
    check_output(args.output)
    logger.info("averaging %d checkpoints: %s", len(paths), " ".join(paths))
    out = average_states(load_states(paths), paths)
    if args.no_optimizer_state:
        out.pop("last_optimizer_state", None)
    save_checkpoint(out, args.output)  # atomic: <output>.tmp, then rename
    logger.info("wrote %s", args.output)
    return out


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    run_cli("veco-average-checkpoints", get_parser, main, AverageError, argv)


if __name__ == "__main__":
    cli_main()
