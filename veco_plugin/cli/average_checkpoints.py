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

Averaging and checks: :mod:`veco_plugin.checkpoints.averaging`.
"""

from __future__ import annotations

import argparse
import logging
import os
from typing import Any, Dict, List, Optional, Sequence

from ..checkpoints.averaging import AverageError, average_states, load_states, select_checkpoints
from ..checkpoints.files import check_output, save_checkpoint
from .common import run_cli

logger = logging.getLogger("veco_plugin.cli.average_checkpoints")


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
        epilog=(
            "example: veco-average-checkpoints --inputs checkpoints/wmt14_en-de "
            "--num-update-checkpoints 10 --output averaged.pt"
        ),
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
