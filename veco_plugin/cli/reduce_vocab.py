"""Reduce the pre-trained vocabulary to the types a fine-tuning corpus uses.

::

    veco-reduce-vocab --dict xlmr.large/dict.txt \\
        --data wmt14/train.spm.en wmt14/train.spm.de wmt14/valid.spm.* \\
        --output-dir wmt14/vocab
    # -> wmt14/vocab/dict.txt        reduced dictionary (binarize with it)
    #    wmt14/vocab/vocab_map.tsv   new_id <TAB> old_id <TAB> symbol, one line per row
    veco-init-nmt --pretrained veco.pt --vocab-map wmt14/vocab/vocab_map.tsv --output init.pt
    fairseq-preprocess -s en -t de --joined-dictionary --srcdict wmt14/vocab/dict.txt ...

The data files are already subword-encoded text; tokens are whitespace-separated (as
fairseq-preprocess splits them). Kept rows, in their pre-trained order: the special
symbols, every dictionary type occurring at least ``--min-count`` times in the data,
and ``<mask>`` last, where the ``translation_from_pretrained_veco`` task appends it.
``vocab_map.tsv`` lists every row of the reduced embedding matrix (specials and
``<mask>`` included) with the pre-trained row it copies, so a token's embedding in
the resized model equals its pre-trained embedding exactly. Data tokens that are
not in the pre-trained dictionary map to ``<unk>`` before and after; their count is
reported. Counts in the written ``dict.txt`` are the data counts.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections import Counter
from typing import List, Optional, Sequence

from ..checkpoints.vocab_map import (
    DICT_NAME,
    MAP_NAME,
    ReduceVocabError,
    count_tokens,
    select_rows,
    write_outputs,
)
from ..data.dictionary import MASK, load_dictionary_with_mask
from .common import run_cli

logger = logging.getLogger("veco_plugin.cli.reduce_vocab")


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="veco-reduce-vocab",
        description="Keep only the pre-trained dictionary rows that the fine-tuning data "
        "uses; writes dict.txt and vocab_map.tsv for veco-init-nmt --vocab-map.",
    )
    parser.add_argument(
        "--dict",
        required=True,
        metavar="FILE",
        help="the pre-training dict.txt (<mask> is appended as in pre-training)",
    )
    parser.add_argument(
        "--data",
        required=True,
        nargs="+",
        metavar="FILE",
        help="subword-encoded fine-tuning text files (all sides and splits)",
    )
    parser.add_argument(
        "--output-dir",
        required=True,
        metavar="DIR",
        help="where to write dict.txt and vocab_map.tsv",
    )
    parser.add_argument(
        "--min-count",
        type=int,
        default=1,
        metavar="N",
        help="keep types occurring at least N times in --data (default 1)",
    )
    return parser


def main(args: argparse.Namespace) -> List[int]:
    if args.min_count < 1:
        raise ReduceVocabError("--min-count must be >= 1")
    if not os.path.isfile(args.dict):
        raise ReduceVocabError(f"--dict {args.dict}: no such file")
    dictionary = load_dictionary_with_mask(args.dict)
    counts: Counter = Counter()
    for path in args.data:
        if not os.path.isfile(path):
            raise ReduceVocabError(f"--data {path}: no such file")
        with open(path, encoding="utf-8") as f:
            counts.update(count_tokens(f))
    rows = select_rows(dictionary.symbols, dictionary.nspecial, counts, args.min_count)
    write_outputs(args.output_dir, dictionary.symbols, dictionary.nspecial, rows, counts)
    unknown = sum(c for s, c in counts.items() if s not in dictionary.indices)
    total = sum(counts.values())
    logger.info(
        "kept %d of %d rows (%d specials + %d data types + %s); %d of %d data tokens "
        "(%.2f%%) are not in the dictionary (<unk> before and after); wrote %s and %s",
        len(rows), len(dictionary), dictionary.nspecial, len(rows) - dictionary.nspecial - 1,
        MASK, unknown, total, 100.0 * unknown / max(total, 1),
        os.path.join(args.output_dir, DICT_NAME), os.path.join(args.output_dir, MAP_NAME),
    )  # fmt: skip
    return rows


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    run_cli("veco-reduce-vocab", get_parser, main, ReduceVocabError, argv)


if __name__ == "__main__":
    cli_main()
