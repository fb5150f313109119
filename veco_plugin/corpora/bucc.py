"""BUCC 2018's files as XTREME's download leaves them (``download_data.sh``'s
``download_bucc18``): under one folder, per language ``xx`` of de, fr, ru, zh,

* ``xx-en.dev.xx``, ``xx-en.dev.en``, ``xx-en.dev.gold``: BUCC's *sample* split, gold kept;
* ``xx-en.test.xx``, ``xx-en.test.en``: BUCC's *training* split (its gold removed: XTREME's
  hidden labels; a ``xx-en.test.gold`` put back is read).

A text file holds ``id<TAB>sentence`` lines (``run_bucc2018.sh`` cuts them into ids and
sentences), a gold file ``xx_id<TAB>en_id`` lines.
"""

import os
from dataclasses import dataclass
from typing import List, Optional, Set, Tuple

from ..errors import VecoUserError

LANGS = ("de", "fr", "ru", "zh")  # XTREME's order of evaluation: fr ru zh de in the script
SPLITS = ("dev", "test")


@dataclass(frozen=True)
class BuccSide:
    ids: Tuple[str, ...]
    sentences: Tuple[str, ...]


@dataclass(frozen=True)
class BuccSplit:
    """One split of one language pair: the ``xx`` side, the English side, gold if known."""

    source: BuccSide
    english: BuccSide
    gold: Optional[Set[Tuple[str, str]]]


def path(directory: str, lang: str, split: str, suffix: str) -> str:
    return os.path.join(directory, f"{lang}-en.{split}.{suffix}")


def _lines(file: str) -> List[str]:
    try:
        with open(file, encoding="utf-8") as f:
            return [line.rstrip("\n") for line in f]
    except FileNotFoundError:
        raise VecoUserError(f"{file}: no such file (XTREME's bucc2018 download layout)") from None
    except UnicodeDecodeError as exc:
        raise VecoUserError(f"{file}: not UTF-8 (byte {exc.start})") from None


def read_side(file: str) -> BuccSide:
    """``id<TAB>sentence`` lines (``cut -f1`` and ``cut -f2``)."""
    ids, sentences = [], []
    for number, line in enumerate(_lines(file), 1):
        fields = line.split("\t")
        if len(fields) < 2:
            raise VecoUserError(f"{file}, line {number}: expected id<TAB>sentence")
        ids.append(fields[0])
        sentences.append(fields[1])
    if not ids:
        raise VecoUserError(f"{file}: no sentences")
    return BuccSide(tuple(ids), tuple(sentences))


def read_gold(file: str) -> Set[Tuple[str, str]]:
    """``xx_id<TAB>en_id`` lines as a set of pairs."""
    pairs = set()
    for number, line in enumerate(_lines(file), 1):
        fields = line.strip().split("\t")
        if len(fields) != 2:
            raise VecoUserError(f"{file}, line {number}: expected xx_id<TAB>en_id")
        pairs.add((fields[0], fields[1]))
    return pairs


def read_split(directory: str, lang: str, split: str) -> BuccSplit:
    """``split`` (dev or test) of ``lang``-en; dev must have its gold."""
    gold_file = path(directory, lang, split, "gold")
    if split == "dev" and not os.path.isfile(gold_file):
        raise VecoUserError(
            f"{gold_file}: no such file: the threshold is chosen on BUCC's sample (dev) gold"
        )
    gold = read_gold(gold_file) if os.path.isfile(gold_file) else None
    source = read_side(path(directory, lang, split, lang))
    english = read_side(path(directory, lang, split, "en"))
    return BuccSplit(source, english, gold)
