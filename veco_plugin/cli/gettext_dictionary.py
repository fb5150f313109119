"""``veco-gettext-dictionary``: an English-X bilingual word list from gettext catalogs.

What is kept and how it is split: :mod:`veco_plugin.corpora.gettext_dictionary`::

    veco-gettext-dictionary --tgt-lang de --output data/dict-en-de
    # -> train.txt heldout.txt (src tgt per line) dictionary.json
"""

import argparse
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
from .config_flags import add_config_flags, config_from_flags

PROG = "veco-gettext-dictionary"


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        epilog="example: veco-gettext-dictionary --tgt-lang de --output WORDS",
        prog=PROG,
        description="Extract an English-X word dictionary (MUSE layout, train/held-out "
        "split by English word) from the single-word entries of gettext .mo catalogs.",
    )
    add_config_flags(p, DictionaryConfig)
    return p


def main(args: argparse.Namespace) -> BilingualDictionary:
    """Build and write the dictionary; one summary line per split."""
    check_tgt_lang(args.tgt_lang)
    check_output_dir(str(args.output), "--output")
    cfg = config_from_flags(DictionaryConfig, args)
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
