"""``veco-prepare-pretraining``: a folder of many languages' text -> a sharded DATA.

::

    veco-prepare-pretraining --text TEXT --out DATA --shards 8 --workers 2 --vocab-size 32000
    # TEXT/mono/<lang>/*.txt[.gz|.xz], TEXT/bi/<src>-<tgt>/<name>.<src> + <name>.<tgt>
    # -> DATA/shard0 ... DATA/shard7, each a veco_pretraining DATA
    veco-prepare-pretraining ... --shard $SLURM_ARRAY_TASK_ID   # one shard (a job array)

The steps and the formats: :mod:`veco_plugin.prepare`.
"""

import argparse
import logging
import os
import sys
from typing import Optional, Sequence

from ..errors import VecoUserError
from ..prepare.plan import Settings
from ..pretraining_command import USER_DIR
from .common import run_cli
from .config_flags import add_config_flags, config_from_flags

PROG = "veco-prepare-pretraining"
logger = logging.getLogger(PROG)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: pass 1 or more")
    return value


# the Settings whose flags take a count of 1 or more (_positive's message), and the
# Settings flags after --threads, in --help's order
COUNTS = {name: _positive for name in ("shards", "vocab_size", "spm_sample_lines")}
SETTINGS_FLAGS = (
    "vocab_size",
    "valid_lines",
    "spm_alpha",
    "spm_sample_lines",
    "spm_model",
    "dict",
    "seed",
)


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        epilog=(
            "example: veco-prepare-pretraining --text TEXT --out DATA --shards 64 "
            "--workers 8 --vocab-size 250000"
        ),
        prog=PROG,
        description="Prepare a sharded veco_pretraining DATA (joint sentencepiece model, "
        "dict.txt, binarized mono/ and bi/ per shard) from a folder of text.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add_config_flags(p, Settings, ["text"])
    p.add_argument("--out", required=True, help="DATA: shard0 ... shard<N-1> go here")
    add_config_flags(p, Settings, ["shards"], types=COUNTS)
    p.add_argument(
        "--shard", type=int, help="build only this shard (0-based; e.g. $SLURM_ARRAY_TASK_ID)"
    )
    p.add_argument("--workers", type=_positive, default=1, help="shards built at once (processes)")
    p.add_argument(
        "--threads",
        type=_positive,
        default=1,
        help="sentencepiece threads per process (training too: the model depends on them)",
    )
    add_config_flags(p, Settings, SETTINGS_FLAGS, types=COUNTS)
    return p


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The checked :class:`Settings` of the flags (paths made absolute)."""
    if args.dict and not args.spm_model:
        raise VecoUserError("--dict needs --spm-model (the model whose pieces it lists)")
    for flag, path in (("--spm-model", args.spm_model), ("--dict", args.dict)):
        if path and not os.path.isfile(path):
            raise VecoUserError(f"{flag} {path}: no such file")
    if args.valid_lines < 0:
        raise VecoUserError(f"--valid-lines {args.valid_lines}: pass 0 or more")
    return config_from_flags(
        Settings,
        args,
        text=os.path.abspath(args.text),
        spm_model=os.path.abspath(args.spm_model) if args.spm_model else None,
        dict=os.path.abspath(args.dict) if args.dict else None,
    )


def main(args: argparse.Namespace) -> None:
    from ..prepare import pipeline

    settings = settings_from_args(args)
    plan = pipeline.prepare(settings, args.out, args.shard, args.workers, args.threads)
    shards = ":".join(os.path.join(args.out, f"shard{k}") for k in range(args.shards))
    flags = [("--mono-langs", plan.mono_langs), ("--bi-pairs", plan.bi_pairs)]
    train = " ".join(f"{flag} {','.join(names)}" for flag, names in flags if names)
    done = "DATA ready" if args.shard is None else f"shard{args.shard} ready"
    command = f"fairseq-train {shards} --user-dir {USER_DIR} --task veco_pretraining {train}"
    print(f"{done}: {command} ...", flush=True)


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    """Console entry point; exits 1 with one line on a user error."""
    run_cli(PROG, get_parser, main, VecoUserError, list(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    cli_main()
