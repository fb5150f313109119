"""``veco-spm``: sentencepiece on text files, for the shell stages.

::

    veco-spm train  --model-prefix DATA/spm --vocab-size N INPUT [INPUT ...]
        the joint unigram model of scripts/prepare-pretraining-data.sh
    veco-spm encode --model M [--workers N] [--dict dict.txt] SRC DST [SRC DST ...]
        one line of space-joined pieces per line; --dict: also write the fairseq
        dictionary of M there unless it exists
    veco-spm prepare --parallel A.en A.de [--parallel ...] [--files F ...] \\
                     [--train-vocab-size N --train-inputs F ...] --model M \\
                     [--dict dict.txt] --encode SRC DST [SRC DST ...]
        the text half of scripts/prepare-pretraining-data.sh in one process (each
        process pays the plugin's import): check that every file is UTF-8 and each
        parallel pair line-aligned, train M if asked, encode, write the dictionary

``--prog NAME`` (before the subcommand) names the calling script in error lines. The
functions: :mod:`veco_plugin.corpora.subwords`, :mod:`veco_plugin.corpora.text`.
"""

import argparse
import os
import sys
from typing import List, Optional, Sequence, Tuple

from ..corpora import subwords, text
from ..errors import VecoUserError
from .common import prog_from_argv, run_cli

PROG = "veco-spm"


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="sentencepiece on text files")
    parser.add_argument("--prog", default=PROG, help="name shown in error lines")
    sub = parser.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train the joint sentencepiece model")
    t.add_argument("--model-prefix", required=True)
    t.add_argument("--vocab-size", type=int, required=True)
    t.add_argument("inputs", nargs="+")

    e = sub.add_parser("encode", help="encode SRC into DST for each pair")
    e.add_argument("--model", required=True)
    e.add_argument("--workers", type=int, default=1)
    e.add_argument("--dict", help="write the fairseq dictionary of --model here if absent")
    e.add_argument("files", nargs="+", metavar="SRC DST")

    p = sub.add_parser("prepare", help="check, train (if asked), encode, dictionary")
    p.add_argument("--parallel", nargs=2, action="append", default=[], metavar=("A", "B"))
    p.add_argument("--files", nargs="+", default=[], help="other files to check")
    p.add_argument("--model", required=True, help="MODEL.model (trained with --train-*)")
    p.add_argument("--train-vocab-size", type=int, help="train --model first, this size")
    p.add_argument("--train-inputs", nargs="+", default=[], help="text to train on")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--dict", help="write the fairseq dictionary of --model here if absent")
    p.add_argument("--encode", nargs="+", required=True, metavar="SRC DST")
    return parser


def _pairs(files: Sequence[str]) -> List[Tuple[str, str]]:
    if len(files) % 2:
        raise VecoUserError(f"expected SRC DST pairs, got {len(files)} paths")
    return list(zip(files[::2], files[1::2]))


def _encode(model: str, files: Sequence[str], workers: int, dict_path: Optional[str]) -> None:
    subwords.load_sentencepiece(model, "--model")  # a missing/bad model names this tool's flag
    subwords.encode_files(model, _pairs(files), workers)
    if dict_path and not os.path.exists(dict_path):
        subwords.write_dictionary(model, dict_path)


def prepare(args: argparse.Namespace) -> None:
    pairs = _pairs(args.encode)
    print("== checking text", flush=True)
    text.check_parallel_text([(a, b) for a, b in args.parallel], args.files)
    for _, dst in pairs:
        os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
    if args.train_vocab_size:
        if not args.model.endswith(".model") or not args.train_inputs:
            raise VecoUserError("training needs --model PREFIX.model and --train-inputs")
        print(f"== training a joint sentencepiece model ({args.train_vocab_size} pieces)")
        sys.stdout.flush()
        prefix = args.model[: -len(".model")]
        subwords.train_sentencepiece(args.train_inputs, prefix, args.train_vocab_size)
    print(f"== encoding text with {args.model}", flush=True)
    _encode(args.model, args.encode, args.workers, args.dict)


def main(args: argparse.Namespace) -> None:
    if args.command == "train":
        subwords.train_sentencepiece(args.inputs, args.model_prefix, args.vocab_size)
    elif args.command == "encode":
        _encode(args.model, args.files, args.workers, args.dict)
    else:
        prepare(args)


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    """Console entry point ``veco-spm``; exits 1 with one line on a user error."""
    argv = list(sys.argv[1:] if argv is None else argv)
    run_cli(prog_from_argv(argv, PROG), get_parser, main, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
