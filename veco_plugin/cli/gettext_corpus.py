"""``veco-gettext-corpus``: an English-X parallel corpus from gettext catalogs.

The corpus builder (reading, cleaning, splitting by catalog, writing; its rules and
measured sizes) is :mod:`veco_plugin.corpora.gettext`; this is its command line::

    veco-gettext-corpus --tgt-lang de --output data/gettext-en-de
    # -> {train,valid,test}.{en,de} mono.en mono.de catalogs.json
"""

import argparse
import sys
from typing import Optional, Sequence

from ..corpora.gettext import (
    SPLITS,
    SRC_LANG,
    Corpus,
    CorpusConfig,
    CorpusError,
    build_corpus,
    check_tgt_lang,
    write_corpus,
)
from ..outputs import check_output_dir
from .common import run_cli
from .config_flags import add_config_flags, config_from_flags

PROG = "veco-gettext-corpus"


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        epilog="example: veco-gettext-corpus --tgt-lang de --output data/gettext",
        prog=PROG,
        description="Build an English-X parallel corpus (train/valid/test split by "
        "catalog, plus monolingual sides) from gettext .mo catalogs.",
    )
    add_config_flags(p, CorpusConfig)
    return p


def config_from_args(args: argparse.Namespace) -> CorpusConfig:
    """The one place where command-line values become a checked config."""
    check_tgt_lang(args.tgt_lang)
    check_output_dir(str(args.output), "--output")
    for flag, value, low in (
        ("--valid-size", args.valid_size, 1),
        ("--test-size", args.test_size, 1),
        ("--min-words", args.min_words, 1),
        ("--max-catalogs", args.max_catalogs, 2),
    ):
        if value is not None and value < low:
            raise CorpusError(f"{flag} must be >= {low}, got {value}")
    if args.max_words < args.min_words:
        raise CorpusError(
            f"--max-words ({args.max_words}) must be >= --min-words ({args.min_words})"
        )
    if args.max_ratio < 1:
        raise CorpusError(f"--max-ratio must be >= 1, got {args.max_ratio}")
    if not 0 <= args.min_word_fraction <= 1:
        raise CorpusError(f"--min-word-fraction must be in [0, 1], got {args.min_word_fraction}")
    return config_from_flags(CorpusConfig, args)


def main(cfg: CorpusConfig) -> Corpus:
    """Build and write the corpus, print one summary line per split."""
    corpus = build_corpus(cfg)
    write_corpus(corpus, cfg)
    for name, reason in corpus.skipped.items():
        print(f"warning: skipped catalog {name}: {reason}", file=sys.stderr)
    for split in SPLITS:
        n_cat = len(corpus.catalog_counts[split])
        line = f"{split}: {len(corpus.pairs[split])} pairs from {n_cat} catalogs"
        if split == "train":
            line += f" ({corpus.removed_from_train} pairs removed: English in valid/test)"
        print(line)
    print(
        f"mono: {len(corpus.mono_en)} {SRC_LANG} lines, {len(corpus.pairs['train'])} "
        f"{cfg.tgt_lang} lines -> {cfg.output}"
    )
    return corpus


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    """Console entry point ``veco-gettext-corpus``; exits 2 with one line on a user
    error."""
    run_cli(PROG, get_parser, lambda args: main(config_from_args(args)), CorpusError, argv, 2)


if __name__ == "__main__":
    cli_main()
