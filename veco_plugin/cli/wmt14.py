"""``veco-wmt14``: the text stages of the WMT14 En-De / En-Fr pipeline.

``scripts/prepare-wmt14en2{de,fr}.sh`` and ``scripts/evaluate-wmt14.sh`` hold the flags
and call the stock ``fairseq-*`` tools; they call this for what needs Python::

    veco-wmt14 missing  --pair en-de --raw-dir RAW
        archive names and URLs (tab-separated, one a line) of which neither the archive
        nor its files are in RAW
    veco-wmt14 prepare  --pair en-de --raw-dir RAW --work-dir TMP --dest-dir BIN \\
                        --spm-model M | --bpe-codes C  [--max-len 250 --ratio 1.5 ...]
        TMP/{train,valid,test}.{en,de}: subword text for fairseq-preprocess
        BIN/{valid,test}.raw.{en,de}: untokenized valid/test text (sacreBLEU references)
    veco-wmt14 score    --generate-output gen.txt --raw-src S --raw-ref R --tgt de ...
        hypotheses in original order, subwords decoded, sacreBLEU + tokenized BLEU

``--prog NAME`` (before the subcommand) names the calling script in error lines. The
corpora, reading and cleaning rules: :mod:`veco_plugin.corpora.wmt14`; scoring:
:mod:`veco_plugin.evaluation.bleu`.
"""

import argparse
import os
import sys
from typing import Optional, Sequence

from ..corpora import text, wmt14
from ..errors import VecoUserError
from ..evaluation import bleu
from ..outputs import check_output_file
from .common import prog_from_argv, run_cli
from .config_flags import add_config_flags, config_from_flags

# ScoreConfig's fields in the order --help lists them (a dataclass puts the required first)
SCORE_FLAGS = (
    "generate_output",
    "raw_ref",
    "raw_src",
    "tgt",
    "spm_model",
    "subword",
    "hyp_out",
    "json",
    "checkpoint",
)


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        epilog=(
            "example: veco-wmt14 prepare --pair en-de --raw-dir wmt14/orig --work-dir "
            "wmt14/work --dest-dir data-bin/wmt14_en_de --spm-model PRE/spm.model"
        ),
        prog=wmt14.PROG,
        description="Text stages of the WMT14 En-De / En-Fr pipeline.",
    )
    parser.add_argument("--prog", default=wmt14.PROG, help="name shown in error lines")
    sub = parser.add_subparsers(dest="command", required=True)

    m = sub.add_parser("missing", help="list archives not present in --raw-dir")
    add_config_flags(m, wmt14.PrepareConfig, ["pair", "raw_dir"])

    p = sub.add_parser("prepare", help="extract, clean and subword-encode")
    add_config_flags(p, wmt14.PrepareConfig, ["pair", "raw_dir", "work_dir", "dest_dir"])
    enc = p.add_mutually_exclusive_group(required=True)
    add_config_flags(enc, wmt14.PrepareConfig, ["spm_model", "bpe_codes"])
    add_config_flags(p, wmt14.PrepareConfig, ["bpe_vocab", "clean", "workers"])
    # drop_bad_utf8 is a bool; its flag takes a word (a generated one would be a switch)
    p.add_argument("--bad-utf8", choices=["error", "drop"], default="error")
    add_config_flags(p, wmt14.PrepareConfig, ["chunk_size", "no_download"])

    s = sub.add_parser("score", help="collect hypotheses, decode, sacreBLEU + tok BLEU")
    add_config_flags(s, bleu.ScoreConfig, SCORE_FLAGS)
    return parser


def check_score_paths(args: argparse.Namespace) -> None:
    """The inputs of ``score`` readable and not empty, its outputs writable: before the
    hypotheses are read or decoded."""
    for flag, path in (
        ("--generate-output", args.generate_output),
        ("--raw-ref", args.raw_ref),
        ("--raw-src", args.raw_src),
    ):
        if path is not None:
            text.input_file(path, flag)
    text.count_lines(args.generate_output, fix="give the log fairseq-generate wrote")
    if text.count_lines(args.raw_ref) == 0:
        raise VecoUserError(f"--raw-ref {args.raw_ref} is empty: no reference to score against")
    check_output_file(args.hyp_out, "--hyp-out", "test.hyp")
    if args.json:
        check_output_file(args.json, "--json", "scores.json")
    inputs = {
        os.path.abspath(path): flag
        for flag, path in (
            ("--generate-output", args.generate_output),
            ("--raw-ref", args.raw_ref),
            ("--raw-src", args.raw_src),
        )
        if path
    }
    for flag, path in (
        ("--hyp-out", args.hyp_out),
        ("--hyp-out", f"{args.hyp_out}.subword"),
        ("--json", args.json),
    ):
        if path and os.path.abspath(path) in inputs:
            raise VecoUserError(
                f"{flag} {args.hyp_out if flag == '--hyp-out' else path} would overwrite "
                f"{inputs[os.path.abspath(path)]} {path}: name another file"
            )


def prepare_config(args: argparse.Namespace) -> wmt14.PrepareConfig:
    """The flags of ``prepare`` as its config (``--bad-utf8 drop``: ``drop_bad_utf8``)."""
    return config_from_flags(wmt14.PrepareConfig, args, drop_bad_utf8=args.bad_utf8 == "drop")


def main(args: argparse.Namespace) -> None:
    if args.command == "missing":
        for archive, url in wmt14.missing_archives(args.pair, args.raw_dir):
            print(f"{archive}\t{url}")
    elif args.command == "prepare":
        wmt14.prepare(prepare_config(args))
    else:
        check_score_paths(args)
        bleu.score(config_from_flags(bleu.ScoreConfig, args))


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    """Console entry point ``veco-wmt14``; exits 1 with one line on a user error."""
    argv = list(sys.argv[1:] if argv is None else argv)
    run_cli(prog_from_argv(argv, wmt14.PROG), get_parser, main, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
