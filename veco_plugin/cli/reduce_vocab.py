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
from typing import Iterable, List, Optional, Sequence, Tuple

from ..data.dictionary import MASK, load_dictionary_with_mask
from .common import run_cli

logger = logging.getLogger("veco_plugin.cli.reduce_vocab")

MAP_NAME = "vocab_map.tsv"
DICT_NAME = "dict.txt"


class ReduceVocabError(Exception):
    """Bad input, reported to the user as one line."""


def count_tokens(lines: Iterable[str]) -> Counter:
    """Whitespace-token counts of subword-encoded text."""
    counts: Counter = Counter()
    for line in lines:
        counts.update(line.split())
    return counts


def select_rows(
    symbols: Sequence[str], nspecial: int, counts: Counter, min_count: int = 1
) -> List[int]:
    """Pre-trained rows to keep: specials, data types with ``count >= min_count``, <mask>.

    Args:
        symbols: the pre-training dictionary's symbols, ``<mask>`` included (row order)
        nspecial: number of leading special symbols (always kept)
    Returns:
        increasing row indices, except that ``<mask>``'s row comes last.
    """
    if MASK not in symbols:
        raise ReduceVocabError(f"the dictionary has no {MASK}")
    mask_row = max(i for i, s in enumerate(symbols) if s == MASK)
    index = {s: i for i, s in enumerate(symbols)}  # last occurrence wins, as in fairseq
    keep = set(range(nspecial))
    keep.update(index[s] for s, c in counts.items() if c >= min_count and s in index)
    keep.discard(mask_row)
    return sorted(keep) + [mask_row]


def read_vocab_map(path: str) -> Tuple[List[int], List[str]]:
    """``vocab_map.tsv`` -> (old row of each new row, symbol of each new row)."""
    rows, symbols = [], []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
                raise ReduceVocabError(f"{path}:{n + 1}: expected new_id<TAB>old_id<TAB>symbol")
            if int(parts[0]) != n:
                raise ReduceVocabError(f"{path}:{n + 1}: new ids must be 0, 1, 2, ... in order")
            rows.append(int(parts[1]))
            symbols.append(parts[2])
    if not rows:
        raise ReduceVocabError(f"{path} is empty")
    return rows, symbols


def write_outputs(
    output_dir: str, symbols: Sequence[str], nspecial: int, rows: Sequence[int], counts: Counter
) -> None:
    """Write ``dict.txt`` (fairseq format, without specials and ``<mask>``) and the map."""
    os.makedirs(output_dir, exist_ok=True)
    with open(os.path.join(output_dir, DICT_NAME), "w", encoding="utf-8") as f:
        for row in rows[nspecial:-1]:
            f.write(f"{symbols[row]} {counts.get(symbols[row], 0)}\n")
    with open(os.path.join(output_dir, MAP_NAME), "w", encoding="utf-8") as f:
        for new, old in enumerate(rows):
            f.write(f"{new}\t{old}\t{symbols[old]}\n")


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
