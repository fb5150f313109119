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


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=wmt14.PROG, description="Text stages of the WMT14 En-De / En-Fr pipeline."
    )
    parser.add_argument("--prog", default=wmt14.PROG, help="name shown in error lines")
    sub = parser.add_subparsers(dest="command", required=True)

    m = sub.add_parser("missing", help="list archives not present in --raw-dir")
    m.add_argument("--pair", required=True, choices=wmt14.PAIRS)
    m.add_argument("--raw-dir", required=True)

    p = sub.add_parser("prepare", help="extract, clean and subword-encode")
    p.add_argument("--pair", required=True, choices=wmt14.PAIRS)
    p.add_argument("--raw-dir", required=True)
    p.add_argument("--work-dir", required=True, help="subword text for fairseq-preprocess")
    p.add_argument("--dest-dir", required=True, help="gets {valid,test}.raw.<lang>")
    enc = p.add_mutually_exclusive_group(required=True)
    enc.add_argument("--spm-model")
    enc.add_argument("--bpe-codes")
    p.add_argument("--bpe-vocab", help="fastBPE vocabulary (optional)")
    p.add_argument("--min-len", type=int, default=1, help="min subword tokens a side")
    p.add_argument("--max-len", type=int, default=250, help="max subword tokens a side")
    p.add_argument("--ratio", type=float, default=1.5, help="max token-count ratio")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--bad-utf8", choices=["error", "drop"], default="error")
    p.add_argument("--chunk-size", type=int, default=100000)
    p.add_argument(
        "--no-download",
        action="store_true",
        help="first check that no archive is missing (the error names its URL)",
    )

    s = sub.add_parser("score", help="collect hypotheses, decode, sacreBLEU + tok BLEU")
    s.add_argument("--generate-output", required=True)
    s.add_argument("--raw-ref", required=True)
    s.add_argument("--raw-src")
    s.add_argument("--tgt", required=True)
    s.add_argument("--spm-model")
    s.add_argument("--subword", choices=bleu.SUBWORDS, default="sentencepiece")
    s.add_argument("--hyp-out", required=True)
    s.add_argument("--json")
    s.add_argument("--checkpoint")
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


def main(args: argparse.Namespace) -> None:
    if args.command == "missing":
        for archive, url in wmt14.missing_archives(args.pair, args.raw_dir):
            print(f"{archive}\t{url}")
    elif args.command == "prepare":
        wmt14.prepare(
            wmt14.PrepareConfig(
                pair=args.pair,
                raw_dir=args.raw_dir,
                work_dir=args.work_dir,
                dest_dir=args.dest_dir,
                spm_model=args.spm_model,
                bpe_codes=args.bpe_codes,
                bpe_vocab=args.bpe_vocab,
                clean=wmt14.CleanConfig(args.min_len, args.max_len, args.ratio),
                workers=args.workers,
                drop_bad_utf8=args.bad_utf8 == "drop",
                chunk_size=args.chunk_size,
                no_download=args.no_download,
            )
        )
    else:
        check_score_paths(args)
        bleu.score(
            bleu.ScoreConfig(
                generate_output=args.generate_output,
                raw_ref=args.raw_ref,
                tgt=args.tgt,
                hyp_out=args.hyp_out,
                raw_src=args.raw_src,
                spm_model=args.spm_model,
                subword=args.subword,
                json=args.json,
                checkpoint=args.checkpoint,
            )
        )


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    """Console entry point ``veco-wmt14``; exits 1 with one line on a user error."""
    argv = list(sys.argv[1:] if argv is None else argv)
    run_cli(prog_from_argv(argv, wmt14.PROG), get_parser, main, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
