"""``veco-spm``: sentencepiece on text files, for the shell stages.

::

    veco-spm check  --parallel A.en A.de [--parallel ...] [--files F ...]
        every file UTF-8 (file and line named), each parallel pair line-aligned
    veco-spm train  --model-prefix DATA/spm --vocab-size N INPUT [INPUT ...]
        the joint unigram model of scripts/prepare-pretraining-data.sh
    veco-spm encode --model M [--workers N] [--dict dict.txt] SRC DST [SRC DST ...]
        one line of space-joined pieces per line; --dict: also write the fairseq
        dictionary of M there unless it exists
    veco-spm check-length --max-positions N FILE [FILE ...]
        every encoded sentence + <s>, </s> fits the positions

``--prog NAME`` (before the subcommand) names the calling script in error lines. The
functions: :mod:`veco_plugin.corpora.subwords`, :mod:`veco_plugin.corpora.text`.
"""

import argparse
import os
import sys
from typing import List, Optional, Sequence, Tuple

from ..corpora import subwords, text
from ..errors import VecoUserError
from .common import run_cli

PROG = "veco-spm"


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="sentencepiece on text files")
    parser.add_argument("--prog", default=PROG, help="name shown in error lines")
    sub = parser.add_subparsers(dest="command", required=True)

    c = sub.add_parser("check", help="UTF-8 and line-aligned parallel files")
    c.add_argument("--parallel", nargs=2, action="append", default=[], metavar=("A", "B"))
    c.add_argument("--files", nargs="+", default=[], help="other files to check")

    t = sub.add_parser("train", help="train the joint sentencepiece model")
    t.add_argument("--model-prefix", required=True)
    t.add_argument("--vocab-size", type=int, required=True)
    t.add_argument("inputs", nargs="+")

    e = sub.add_parser("encode", help="encode SRC into DST for each pair")
    e.add_argument("--model", required=True)
    e.add_argument("--workers", type=int, default=1)
    e.add_argument("--dict", help="write the fairseq dictionary of --model here if absent")
    e.add_argument("files", nargs="+", metavar="SRC DST")

    m = sub.add_parser("check-length", help="encoded sentences fit --max-positions")
    m.add_argument("--max-positions", type=int, required=True)
    m.add_argument("files", nargs="+")
    return parser


def _pairs(files: Sequence[str]) -> List[Tuple[str, str]]:
    if len(files) % 2:
        raise VecoUserError(f"encode takes SRC DST pairs, got {len(files)} paths")
    return list(zip(files[::2], files[1::2]))


def main(args: argparse.Namespace) -> None:
    if args.command == "check":
        text.check_parallel_text([(a, b) for a, b in args.parallel], args.files)
    elif args.command == "train":
        subwords.train_sentencepiece(args.inputs, args.model_prefix, args.vocab_size)
    elif args.command == "encode":
        subwords.encode_files(args.model, _pairs(args.files), args.workers)
        if args.dict and not os.path.exists(args.dict):
            subwords.write_dictionary(args.model, args.dict)
    else:
        subwords.check_max_positions(args.files, args.max_positions)


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    """Console entry point ``veco-spm``; exits 1 with one line on a user error."""
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = argv[1] if len(argv) > 1 and argv[0] == "--prog" else PROG
    run_cli(prog, get_parser, main, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
