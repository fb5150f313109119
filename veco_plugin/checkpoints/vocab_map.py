"""The vocabulary map of a reduced fine-tuning vocabulary (``veco-reduce-vocab`` writes it,
``veco-init-nmt --vocab-map`` reads it): ``vocab_map.tsv``, one line per row of the
reduced embedding matrix, ``new_id<TAB>old_id<TAB>symbol``, and the reduced ``dict.txt``.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Iterable, List, Sequence, Tuple

from ..data.dictionary import MASK

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
