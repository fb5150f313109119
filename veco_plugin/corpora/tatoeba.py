"""Tatoeba as LASER publishes it (facebookresearch/LASER ``data/tatoeba/v1``): per language
``tatoeba.<xxx>-eng.<xxx>`` and ``tatoeba.<xxx>-eng.eng``, line i of one the translation of
line i of the other, up to 1000 pairs (fewer for jav, tel, tam, swh, tha, kaz, mal, kat).

XTREME tests 36 of LASER's 112 languages under its own codes (:data:`XTREME_CODES`, from
``utils_preprocess.py``'s ``tatoeba_preprocess`` and ``evaluate_retrieval.py``).

XTREME's download (``download_data.sh`` -> ``tatoeba_preprocess``) copies the non-English
side as ``<xx>-en.<xx>`` but writes the English side **sorted** as ``<xx>-en.en``: the gold
order is gone (XTREME keeps it only in its hidden labels). :func:`read_pair` refuses such a
pair (:func:`order_lost`): the English side is in sorted order *and* the two sides do not
line up. Both tests are measured on all 112 LASER pairs: no English side is sorted
(about half of the neighbouring lines are in order, as in a shuffled file) and the
character lengths of the two sides correlate by 0.65-0.99 (Pearson); after XTREME's sort
they correlate by -0.15-0.24. A file of fewer than :data:`MIN_CHECKED` lines is not judged
(a shuffled file of 8 lines is sorted by chance once in 40320).
"""

import math
import os
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

from ..errors import VecoUserError

# LASER's ISO 639-3 code -> XTREME's code, for XTREME's 36 Tatoeba languages
XTREME_CODES: Dict[str, str] = {
    "ara": "ar", "heb": "he", "vie": "vi", "ind": "id", "jav": "jv", "tgl": "tl",
    "eus": "eu", "mal": "ml", "tam": "ta", "tel": "te", "afr": "af", "nld": "nl",
    "deu": "de", "ell": "el", "ben": "bn", "hin": "hi", "mar": "mr", "urd": "ur",
    "pes": "fa", "fra": "fr", "ita": "it", "por": "pt", "spa": "es", "bul": "bg",
    "rus": "ru", "jpn": "ja", "kat": "ka", "kor": "ko", "tha": "th", "swh": "sw",
    "cmn": "zh", "kaz": "kk", "tur": "tr", "est": "et", "fin": "fi", "hun": "hu",
}  # fmt: skip
LASER_CODES = {xx: xxx for xxx, xx in XTREME_CODES.items()}

MIN_CHECKED = 8  # lines: below this, a sorted English side may be chance
ALIGNED = 0.5  # length correlation: LASER's pairs >= 0.65, after XTREME's sort <= 0.24


@dataclass(frozen=True)
class TatoebaPair:
    """One language's test set: ``sentences[i]`` translates ``english[i]``."""

    lang: str  # XTREME's code
    sentences: Tuple[str, ...]
    english: Tuple[str, ...]
    source: str  # the non-English file
    target: str  # the English file


def laser_files(directory: str, lang: str) -> Tuple[str, str]:
    """LASER's two files of XTREME language ``lang`` under ``directory``."""
    if lang not in LASER_CODES:
        raise VecoUserError(
            f"{lang}: not one of XTREME's Tatoeba languages ({', '.join(sorted(LASER_CODES))})"
        )
    xxx = LASER_CODES[lang]
    stem = os.path.join(directory, f"tatoeba.{xxx}-eng")
    return f"{stem}.{xxx}", f"{stem}.eng"


def available(directory: str) -> List[str]:
    """XTREME's languages whose two LASER files are under ``directory``, XTREME's order."""
    return [lang for lang in LASER_CODES if all(map(os.path.isfile, laser_files(directory, lang)))]


def _read(path: str) -> List[str]:
    try:
        with open(path, encoding="utf-8") as f:  # lines as XTREME reads them
            return [line.rstrip("\n") for line in f]
    except FileNotFoundError:
        raise VecoUserError(f"{path}: no such file (LASER's data/tatoeba/v1 layout)") from None
    except IsADirectoryError:
        raise VecoUserError(f"{path} is a directory: name LASER's tatoeba file") from None
    except UnicodeDecodeError as exc:
        raise VecoUserError(f"{path}: not UTF-8 (byte {exc.start}): give LASER's file") from None


def _correlation(a: Sequence[int], b: Sequence[int]) -> float:
    """Pearson's r of ``a`` and ``b`` (0 when either is constant)."""
    n = len(a)
    mean_a, mean_b = sum(a) / n, sum(b) / n
    cov = sum((x - mean_a) * (y - mean_b) for x, y in zip(a, b))
    var_a = sum((x - mean_a) ** 2 for x in a)
    var_b = sum((y - mean_b) ** 2 for y in b)
    return cov / math.sqrt(var_a * var_b) if var_a and var_b else 0.0


def order_lost(sentences: Sequence[str], english: Sequence[str]) -> bool:
    """Whether the pair looks like XTREME's download: the English side in sorted order
    (``sorted`` of the stripped lines) while the sides' lengths do not line up."""
    stripped = [line.strip() for line in english]
    if len(stripped) < MIN_CHECKED or stripped != sorted(stripped):
        return False
    lengths = ([len(s.strip()) for s in sentences], [len(s) for s in stripped])
    return _correlation(*lengths) < ALIGNED


def read_pair(lang: str, source: str, target: str) -> TatoebaPair:
    """The line-aligned pair ``source`` (non-English) / ``target`` (English), checked."""
    sentences, english = _read(source), _read(target)
    if len(sentences) != len(english):
        raise VecoUserError(
            f"{source} has {len(sentences)} lines but {target} {len(english)}: give LASER's "
            "line-aligned pair tatoeba.<xxx>-eng.{<xxx>,eng}"
        )
    if not sentences:
        raise VecoUserError(f"{source}: no sentences")
    if order_lost(sentences, english):
        raise VecoUserError(
            f"{target}: the English side is sorted and does not line up with {source} "
            "(XTREME's download_data.sh sorts it; the gold order is lost): give LASER's "
            f"data/tatoeba/v1/tatoeba.{LASER_CODES.get(lang, '<xxx>')}-eng.eng"
        )
    return TatoebaPair(lang, tuple(sentences), tuple(english), source, target)
