"""``veco-gettext-dictionary``: an English-X bilingual word list from gettext catalogs.

What is kept and how it is split: :mod:`veco_plugin.corpora.gettext_dictionary`::

    veco-gettext-dictionary --tgt-lang de --output data/dict-en-de
    # -> train.txt heldout.txt (src tgt per line) dictionary.json
"""

import argparse
from pathlib import Path
from typing import Optional, Sequence

from ..corpora.gettext import SRC_LANG, CorpusError, check_tgt_lang
from ..corpora.gettext_dictionary import (
    SPLITS,
    BilingualDictionary,
    DictionaryConfig,
    build_dictionary,
    write_dictionary,
)
from ..outputs import check_output_dir
from .common import run_cli

PROG = "veco-gettext-dictionary"


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Extract an English-X word dictionary (MUSE layout, train/held-out "
        "split by English word) from the single-word entries of gettext .mo catalogs.",
    )
    p.add_argument("--tgt-lang", required=True, help="target language code, e.g. de or fr")
    p.add_argument("--output", required=True, type=Path, help="output directory")
    p.add_argument(
        "--locale-dir",
        type=Path,
        default=DictionaryConfig.locale_dir,
        help="directory holding <lang>/LC_MESSAGES/*.mo (default: %(default)s)",
    )
    p.add_argument(
        "--held-out-words",
        type=int,
        default=DictionaryConfig.held_out_words,
        help="English words held out with all their translations (default: %(default)s)",
    )
    p.add_argument("--seed", type=int, default=DictionaryConfig.seed, help="split seed")
    p.add_argument(
        "--keep-case", action="store_true", help="keep the catalogs' case (default: lowercase)"
    )
    return p


def main(args: argparse.Namespace) -> BilingualDictionary:
    """Build and write the dictionary; one summary line per split."""
    check_tgt_lang(args.tgt_lang)
    check_output_dir(str(args.output), "--output")
    cfg = DictionaryConfig(
        args.tgt_lang, args.output, args.locale_dir, args.held_out_words, args.seed, args.keep_case
    )
    dictionary = build_dictionary(cfg)
    write_dictionary(dictionary, cfg)
    print(f"entries: {dictionary.counts.summary('entries')}")
    for split in SPLITS:
        pairs = dictionary.pairs[split]
        words = len({en for en, _ in pairs})
        print(f"{split}: {len(pairs)} pairs, {words} {SRC_LANG} words -> {cfg.output}/{split}.txt")
    return dictionary


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    """Console entry point ``veco-gettext-dictionary``; one line on a user error."""
    run_cli(PROG, get_parser, main, CorpusError, argv)


if __name__ == "__main__":
    cli_main()
