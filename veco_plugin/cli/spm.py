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
    veco-spm binarize --dict dict.txt --text T --destdir DATA [--mono L ...] \\
                      [--bi S T ...] [--align-suffix align]
        the binarizing half of the script in one process: what fairseq-preprocess
        --srcdict writes from T/mono.spm.L, T/{train,valid}.spm.* into DATA/mono/L,
        DATA/bi/S-T (:mod:`veco_plugin.prepare.binarize`)

``--prog NAME`` (before the subcommand) names the calling script in error lines. The
functions: :mod:`veco_plugin.corpora.subwords`, :mod:`veco_plugin.corpora.text`.
"""

import argparse
import os
import sys
from typing import List, Optional, Sequence, Tuple

from ..corpora import subwords, text
from ..errors import VecoUserError
from ..outputs import check_output_dir, check_output_file
from .common import prog_from_argv, run_cli

PROG = "veco-spm"


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        epilog=(
            "example: veco-spm train --model-prefix DATA/spm --vocab-size 32000 "
            "TEXT/train.en TEXT/train.de"
        ),
        prog=PROG,
        description="sentencepiece on text files",
    )
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

    b = sub.add_parser("binarize", help="encoded text -> fairseq-preprocess's binary files")
    b.add_argument("--dict", required=True, help="the fairseq dict.txt of the pieces")
    b.add_argument("--text", required=True, help="folder of {mono,train,valid}.spm.<lang>")
    b.add_argument("--destdir", required=True, help="DATA: mono/<lang>, bi/<src>-<tgt> here")
    b.add_argument("--mono", action="append", default=[], metavar="LANG")
    b.add_argument("--bi", nargs=2, action="append", default=[], metavar=("SRC", "TGT"))
    b.add_argument("--align-suffix", help="also binarize {train,valid}.spm.SUFFIX if there")
    return parser


def _at_least(flag: str, value: Optional[int], low: int = 1) -> None:
    if value is not None and value < low:
        raise VecoUserError(f"{flag} must be >= {low}, got {value}")


def _pairs(files: Sequence[str]) -> List[Tuple[str, str]]:
    """The SRC DST pairs: each SRC a non-empty file, each DST a file that can be written
    (checked before any encoding)."""
    if len(files) % 2:
        raise VecoUserError(f"expected SRC DST pairs, got {len(files)} paths")
    pairs = list(zip(files[::2], files[1::2]))
    for src, dst in pairs:
        if os.path.getsize(text.input_file(src)) == 0:
            raise VecoUserError(f"{src} is empty: nothing to encode; give the text file")
        check_output_file(dst, "encode DST")
    return pairs


def _check_dict(dict_path: Optional[str]) -> None:
    if dict_path:
        check_output_file(dict_path, "--dict", "dict.txt")


def _check_training(inputs: Sequence[str], model_prefix: str, flag: str, checked=()) -> None:
    """The training text: files, UTF-8 (those not already ``checked``), not empty; the
    model ``PREFIX.model`` writable, ``PREFIX`` not a directory."""
    if os.path.isdir(model_prefix):
        raise VecoUserError(
            f"{flag} {model_prefix} is a directory: the model is written to PREFIX.model, "
            f"e.g. {os.path.join(model_prefix, 'spm')}"
        )
    check_output_file(f"{model_prefix}.model", flag, "spm.model")
    for path in inputs:
        if path not in checked:
            text.count_lines(text.input_file(path))
        if os.path.getsize(path) == 0:
            raise VecoUserError(f"{path} is empty: nothing to train on; give the text files")


def _encode(model: str, files: Sequence[str], workers: int, dict_path: Optional[str]) -> None:
    _at_least("--workers", workers)
    subwords.load_sentencepiece(model, "--model")  # a missing/bad model names this tool's flag
    pairs = _pairs(files)
    _check_dict(dict_path)
    for _, dst in pairs:
        os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
    subwords.encode_files(model, pairs, workers)
    if dict_path and not os.path.exists(dict_path):
        os.makedirs(os.path.dirname(os.path.abspath(dict_path)), exist_ok=True)
        subwords.write_dictionary(model, dict_path)


def train(args: argparse.Namespace) -> None:
    _at_least("--vocab-size", args.vocab_size)
    _check_training(args.inputs, args.model_prefix, "--model-prefix")
    os.makedirs(os.path.dirname(os.path.abspath(args.model_prefix)), exist_ok=True)
    subwords.train_sentencepiece(args.inputs, args.model_prefix, args.vocab_size)


def prepare(args: argparse.Namespace) -> None:
    _at_least("--train-vocab-size", args.train_vocab_size)
    _at_least("--workers", args.workers)
    if args.train_inputs and args.train_vocab_size is None:
        raise VecoUserError("--train-inputs without --train-vocab-size: give both to train")
    training = args.train_vocab_size is not None
    if training and (not args.model.endswith(".model") or not args.train_inputs):
        raise VecoUserError("training needs --model PREFIX.model and --train-inputs")
    _pairs(args.encode)  # checked before the text is read
    _check_dict(args.dict)
    print("== checking text", flush=True)
    text.check_parallel_text([(a, b) for a, b in args.parallel], args.files)
    prefix = args.model[: -len(".model")]
    if training:
        checked = {p for pair in args.parallel for p in pair} | set(args.files)
        _check_training(args.train_inputs, prefix, "--model", checked)
        os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
        print(f"== training a joint sentencepiece model ({args.train_vocab_size} pieces)")
        sys.stdout.flush()
        subwords.train_sentencepiece(args.train_inputs, prefix, args.train_vocab_size)
    print(f"== encoding text with {args.model}", flush=True)
    _encode(args.model, args.encode, args.workers, args.dict)


def binarize(args: argparse.Namespace) -> None:
    from fairseq.data import Dictionary

    from ..prepare import binarize as b

    dictionary = Dictionary.load(text.input_file(args.dict, "--dict"))
    if len(dictionary) == dictionary.nspecial:  # every piece would be <unk>
        raise VecoUserError(f"--dict {args.dict} holds no piece: give the pieces' dict.txt")
    check_output_dir(args.destdir, "--destdir")
    split = {"train": "train.spm", "valid": "valid.spm"}  # the splits' text prefixes
    for name in [f"{p}.{lang}" for lang in args.mono for p in ("mono.spm", "valid.spm")] + [
        f"{p}.{lang}" for pair in args.bi for lang in pair for p in split.values()
    ]:  # every input before any output
        text.input_file(os.path.join(args.text, name), "--text")
    for lang in args.mono:
        print(f"== binarizing mono/{lang}", flush=True)
        train, valid = (os.path.join(args.text, f"{p}.{lang}") for p in ("mono.spm", "valid.spm"))
        dest = os.path.join(args.destdir, "mono", lang)
        b.binarize_mono(dictionary, train, valid, dest)
    prefixes = [(name, os.path.join(args.text, prefix)) for name, prefix in split.items()]
    for src, tgt in args.bi:
        print(f"== binarizing bi/{src}-{tgt}", flush=True)
        dest = os.path.join(args.destdir, "bi", f"{src}-{tgt}")
        b.binarize_bitext(dictionary, prefixes, (src, tgt), dest, args.align_suffix)


def main(args: argparse.Namespace) -> None:
    if args.command == "train":
        train(args)
    elif args.command == "encode":
        _encode(args.model, args.files, args.workers, args.dict)
    elif args.command == "binarize":
        binarize(args)
    else:
        prepare(args)


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    """Console entry point ``veco-spm``; exits 1 with one line on a user error."""
    argv = list(sys.argv[1:] if argv is None else argv)
    run_cli(prog_from_argv(argv, PROG), get_parser, main, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
