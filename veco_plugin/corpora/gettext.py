"""A real English-X parallel corpus from the system's gettext catalogs
(``veco-gettext-corpus``).

Every ``<locale-dir>/<lang>/LC_MESSAGES/<domain>.mo`` file is a small, human-made
translation memory: each entry maps an English ``msgid`` to a ``msgstr`` in ``<lang>``.
This module reads them with Python's :mod:`gettext` (``GNUTranslations._catalog``),
cleans the entries and writes a line-aligned corpus that the rest of the pipeline can
tokenize and binarize::

    veco-gettext-corpus --tgt-lang de --output data/gettext-en-de
    # -> {train,valid,test}.{en,de} mono.en mono.de catalogs.json

Reading (:func:`read_catalog`)
    The header entry ``""`` is skipped; ``msgctxt`` prefixes (``"ctx\\x04msgid"``) are
    dropped; of a plural entry (keys ``(msgid, n)``) only form 0 is kept and paired with
    the singular ``msgid``. A catalog Python's parser rejects (e.g. a header that is not
    UTF-8 although the catalog says so) is skipped and listed under ``"skipped"``.

Cleaning (:func:`clean_pair`, in this order; the reasons are counted in catalogs.json)
    * whitespace and newlines collapse to single spaces (NFC-normalised);
    * keyboard accelerators are removed: ``_File``/``&File`` at a word start, and a
      single mid-word ``_``/``&`` (``Be_fore``, ``Farb_name``) unless the identifier it
      sits in also occurs verbatim on the other side (``ai_flags``, ``pg_control``);
    * ``untranslated``: an empty side, or a translation equal to the source (casefold);
    * ``noise``: no letters, markup (closing/self-closing tags, ``&lt;`` entities), or
      fewer than ``--min-word-fraction`` of the tokens being words (format specifiers,
      options, paths, URLs, usage synopses are not words);
    * ``too_short`` (English side < ``--min-words`` tokens), ``too_long`` (either side >
      ``--max-words``), ``bad_ratio`` (token-count ratio > ``--max-ratio``);
    * ``duplicate``: an (en, x) pair already kept (same catalog, or another training
      catalog).

Splitting by catalog (:func:`assign_splits`)
    The domain of an entry is its ``.mo`` file; valid and test come from catalogs that
    are never trained on. Catalog names are sorted and shuffled with ``--seed``; in that
    order a catalog joins ``test`` (then ``valid``) while that split is below its target
    (``--test-size``/``--valid-size`` pairs) and only if the split stays within 120% of
    the target with it (so one huge catalog cannot swamp a held-out set); everything
    else is ``train``. A split still short after that pass takes the one training
    catalog that brings it closest to its target (if any brings it closer). Held-out
    splits are deduplicated on the English side (valid also drops English sentences
    that are in test), and a train pair whose English sentence is in valid or test is
    removed from train (some catalogs share strings: gnulib, ISO code lists).

Monolingual files
    ``mono.<lang>`` is ``train.<lang>``, line for line. ``mono.en`` is ``train.en``
    followed by the English msgids of training catalogs that pass the English-side
    filters but whose pair was dropped (translation empty or identical to the source,
    or a bad length ratio), deduplicated and never an English sentence of valid/test.
    (Compiled ``.mo`` files hold no untranslated or fuzzy entries, so these are few.)

Measured on this machine (Debian; /usr/share/locale holds 86 ``de`` and 87 ``fr``
catalogs; default flags, seed 1; about 4.5 s each, 2.6 s of it importing
``veco_plugin``)::

    de: train 36,122  valid 547  test 1,000 pairs   (76 / 2 / 7 catalogs; net-tools
        skipped: its header is not UTF-8; 558 train pairs removed for held-out overlap)
    fr: train 43,481  valid 524  test 1,132 pairs   (78 / 4 / 5 catalogs; 340 removed)
    mono.en: 39,220 (de run) / 45,248 (fr run) lines

``catalogs.json`` records the catalogs and pair counts of each split, the skipped
catalogs, the drop counts and the settings used.
"""

from __future__ import annotations

import gettext
import json
import random
import re
import struct
import unicodedata
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from ..errors import VecoUserError
from ..outputs import write_text
from .text import DropCounts, ratio_exceeds, write_lines

SRC_LANG = "en"
SPLITS = ("train", "valid", "test")
HELD_OUT = ("test", "valid")  # filled in this order
_OVERSHOOT = 1.2  # a held-out split may end up at most 20% above its target

Pair = Tuple[str, str]

_WS = re.compile(r"\s+")
_INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u2060\ufeff]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# A word token: letters, optionally joined by - ' ’ . (e.g. "re-read", "don't", "z.B.").
_WORD = re.compile(r"^[^\W\d_]+(?:[-'’.][^\W\d_]+)*\.?$")
_EDGE_PUNCT = "\"'`«»‹›„“”‚‘’(),;:!?¡¿….–—"  # not [] <> {}: placeholders
_ENTITY = re.compile(r"&(?:[A-Za-z]+|#\d+|#x[0-9A-Fa-f]+);")
# Markup that is not a usage placeholder like "<file>": closing or self-closing tags,
# tags with attributes, and character entities.
_MARKUP = re.compile(
    r"</[A-Za-z][\w:-]*\s*>|<[A-Za-z][\w:-]*(?:\s+[\w:-]+=[^<>]*)?\s*/>"
    r"|<[A-Za-z][\w:-]*\s+[\w:-]+=\"[^<>]*>|" + _ENTITY.pattern
)
# Accelerator markers: "_" or "&" directly before a letter or digit.
_ACCEL = re.compile(r"[_&](?=[^\W_])")
_LANG_CODE = re.compile(r"^[A-Za-z]{2,3}(?:_[A-Za-z]{2})?(?:@[A-Za-z]+)?$")


class CorpusError(VecoUserError):
    """A problem with the input or the flags; the message is one line for the user."""


@dataclass(frozen=True)
class CorpusConfig:
    """All settings of one corpus build (built once from the command line, whose flags
    are these fields: :func:`veco_plugin.cli.config_flags.add_config_flags`)."""

    tgt_lang: str = field(metadata={"help": "target language code, e.g. de or fr"})
    output: Path = field(metadata={"help": "output directory"})
    locale_dir: Path = field(
        default=Path("/usr/share/locale"),
        metadata={"help": "directory holding <lang>/LC_MESSAGES/*.mo (default: %(default)s)"},
    )
    valid_size: int = field(
        default=500, metadata={"help": "target number of valid pairs (default: %(default)s)"}
    )
    test_size: int = field(
        default=1000, metadata={"help": "target number of test pairs (default: %(default)s)"}
    )
    min_words: int = field(
        default=2,
        metadata={"help": "drop pairs whose English side has fewer tokens (default: %(default)s)"},
    )
    max_words: int = field(
        default=50,
        metadata={"help": "drop pairs with a side longer than this (default: %(default)s)"},
    )
    max_ratio: float = field(
        default=3.0,
        metadata={"help": "max token-count ratio between the sides (default: %(default)s)"},
    )
    min_word_fraction: float = field(
        default=0.5,
        metadata={
            "help": "min share of tokens that are words, not specifiers/options/paths "
            "(default: %(default)s)"
        },
    )
    seed: int = field(
        default=1, metadata={"help": "seed of the catalog shuffle (default: %(default)s)"}
    )
    max_catalogs: Optional[int] = field(
        default=None,
        metadata={"help": "use only the first N catalogs in name order (for quick runs)"},
    )


@dataclass
class Catalog:
    """The cleaned entries of one .mo file (one domain)."""

    name: str
    pairs: List[Pair] = field(default_factory=list)
    # English msgids that pass the English-side filters but have no usable pair.
    extra_en: List[str] = field(default_factory=list)
    counts: DropCounts = field(default_factory=DropCounts)


@dataclass
class Corpus:
    """The finished splits plus what is needed for catalogs.json."""

    pairs: Dict[str, List[Pair]]
    catalog_counts: Dict[str, Dict[str, int]]
    mono_en: List[str]
    skipped: Dict[str, str]
    counts: DropCounts  # per-catalog counts summed, + duplicates across training catalogs
    removed_from_train: int


# --------------------------------------------------------------------------- reading


def check_tgt_lang(lang: str) -> None:
    """``--tgt-lang`` is a locale code (``de``, ``pt_BR``, ``sr@latin``), not English."""
    if not _LANG_CODE.match(lang):
        raise CorpusError(f"--tgt-lang '{lang}' is not a locale code like de or fr")
    if lang == SRC_LANG:
        raise CorpusError(f"--tgt-lang must differ from the source language '{SRC_LANG}'")


def find_catalogs(cfg: CorpusConfig) -> List[Path]:
    """The .mo files for ``cfg.tgt_lang``, sorted by name (first ``max_catalogs``)."""
    if not cfg.locale_dir.is_dir():
        raise CorpusError(f"--locale-dir {cfg.locale_dir} is not a directory")
    lang_dir = cfg.locale_dir / cfg.tgt_lang / "LC_MESSAGES"
    paths = sorted(lang_dir.glob("*.mo"))
    if not paths:
        raise CorpusError(
            f"no catalogs found for language '{cfg.tgt_lang}' in {cfg.locale_dir} "
            f"(no {lang_dir}/*.mo); fix --tgt-lang or --locale-dir"
        )
    if cfg.max_catalogs is not None:
        paths = paths[: cfg.max_catalogs]
    return paths


def read_catalog(path: Path) -> List[Pair]:
    """Raw ``(msgid, msgstr)`` entries of one .mo file, in catalog order.

    Skips the header, strips ``msgctxt`` and keeps plural form 0 with the singular
    msgid. Raises :class:`CorpusError` when Python's gettext cannot parse the file.
    """
    try:
        with open(path, "rb") as fp:
            catalog = gettext.GNUTranslations(fp)._catalog  # type: ignore[attr-defined]
    except (OSError, UnicodeDecodeError, LookupError, ValueError, struct.error) as err:
        raise CorpusError(f"cannot be parsed by gettext: {type(err).__name__}: {err}")
    entries = []
    for key, msgstr in catalog.items():
        if isinstance(key, tuple):
            msgid, form = key
            if form != 0:
                continue
        else:
            msgid = key
        msgid = msgid.rsplit("\x04", 1)[-1]  # drop "msgctxt\x04"
        if msgid == "":
            continue  # header
        entries.append((msgid, msgstr))
    return entries


# -------------------------------------------------------------------------- cleaning


def normalize_space(text: str) -> str:
    """NFC, no invisible characters, whitespace runs collapsed to one space."""
    text = unicodedata.normalize("NFC", text)
    text = _INVISIBLE.sub("", text)
    return _WS.sub(" ", text).strip()


def _strip_accelerator(text: str, other: str) -> str:
    """Remove a keyboard accelerator marker from ``text``.

    A marker directly after a space/start (``_File``, ``&Save``) is always removed. A
    single mid-word marker (``Be_fore``) is removed unless the identifier around it also
    occurs in ``other`` (then it is code, like ``ai_flags``). Strings with several
    markers are left alone: they are identifiers (``_POSIX2_LOCALEDEF``).
    """
    marks = list(_ACCEL.finditer(text))
    if len(marks) != 1 or text.count("_") + text.count("&") != 1:
        return text
    i = marks[0].start()
    if _ENTITY.match(text, i):
        return text
    if i > 0 and not text[i - 1].isspace():
        start = i
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_&"):
            start -= 1
        end = i + 1
        while end < len(text) and (text[end].isalnum() or text[end] in "_&"):
            end += 1
        if text[start:end] in other:
            return text
    return text[:i] + text[i + 1 :]


def _word_fraction(text: str) -> float:
    tokens = text.split()
    words = sum(1 for t in tokens if _WORD.match(t.strip(_EDGE_PUNCT)))
    return words / len(tokens) if tokens else 0.0


def _is_noise(text: str, min_word_fraction: float) -> bool:
    if not any(c.isalpha() for c in text) or _CONTROL.search(text):
        return True
    if _MARKUP.search(text):
        return True
    return _word_fraction(text) < min_word_fraction


def english_problem(en: str, cfg: CorpusConfig) -> Optional[str]:
    """Why a cleaned English sentence is unusable on its own (None if it is fine)."""
    if not en:
        return "untranslated"
    if _is_noise(en, cfg.min_word_fraction):
        return "noise"
    n = len(en.split())
    if n < cfg.min_words:
        return "too_short"
    if n > cfg.max_words:
        return "too_long"
    return None


def clean_pair(msgid: str, msgstr: str, cfg: CorpusConfig) -> Tuple[Pair, Optional[str]]:
    """Clean one entry; returns the cleaned pair and the drop reason (None = keep)."""
    en, x = normalize_space(msgid), normalize_space(msgstr)
    en, x = _strip_accelerator(en, x), _strip_accelerator(x, en)
    en, x = normalize_space(en), normalize_space(x)
    problem = english_problem(en, cfg)
    if problem is not None:
        return (en, x), problem
    if not x or x.casefold() == en.casefold():
        return (en, x), "untranslated"
    if _is_noise(x, cfg.min_word_fraction):
        return (en, x), "noise"
    n_en, n_x = len(en.split()), len(x.split())
    if n_x > cfg.max_words:
        return (en, x), "too_long"
    if ratio_exceeds(n_en, n_x, cfg.max_ratio):
        return (en, x), "bad_ratio"
    return (en, x), None


def load_catalog(path: Path, cfg: CorpusConfig) -> Catalog:
    """Read and clean one .mo file; pairs are unique within the catalog."""
    catalog = Catalog(name=path.stem)
    seen: Set[Pair] = set()
    for msgid, msgstr in read_catalog(path):
        pair, reason = clean_pair(msgid, msgstr, cfg)
        if reason is None and pair in seen:
            reason = "duplicate"
        catalog.counts.read += 1
        if catalog.counts.keep(reason):
            seen.add(pair)
            catalog.pairs.append(pair)
        elif reason in ("untranslated", "bad_ratio") and english_problem(pair[0], cfg) is None:
            catalog.extra_en.append(pair[0])
    return catalog


# ------------------------------------------------------------------------- splitting


def _key(en: str) -> str:
    """Comparison key of an English sentence for held-out dedupe and overlap."""
    return en.casefold()


def _new_held_out(pairs: Iterable[Pair], taken: Set[str]) -> List[Pair]:
    """Pairs whose English key is not in ``taken``, first occurrence kept."""
    out, keys = [], set()
    for en, x in pairs:
        k = _key(en)
        if k not in taken and k not in keys:
            keys.add(k)
            out.append((en, x))
    return out


def assign_splits(catalogs: Sequence[Catalog], cfg: CorpusConfig) -> Dict[str, List[str]]:
    """Catalog names per split (see the module docstring for the rule)."""
    order = sorted(c.name for c in catalogs)
    random.Random(cfg.seed).shuffle(order)
    by_name = {c.name: c for c in catalogs}
    target = {"test": cfg.test_size, "valid": cfg.valid_size}
    taken: Dict[str, Set[str]] = {s: set() for s in HELD_OUT}
    names: Dict[str, List[str]] = {s: [] for s in SPLITS}
    for name in order:
        split_for = "train"
        for split in HELD_OUT:
            blocked = set().union(*(taken[s] for s in HELD_OUT if s != split))
            new = _new_held_out(by_name[name].pairs, taken[split] | blocked)
            have = len(taken[split])
            if new and have < target[split] and have + len(new) <= _OVERSHOOT * target[split]:
                taken[split].update(_key(en) for en, _ in new)
                split_for = split
                break
        names[split_for].append(name)
    # A split left short (the remaining catalogs were too big) takes the one training
    # catalog that brings it closest to its target, if that is closer than it is now.
    for split in HELD_OUT:
        blocked = set().union(*(taken[s] for s in HELD_OUT if s != split))
        have, best = len(taken[split]), None
        for name in names["train"] if len(names["train"]) > 1 else []:
            new = _new_held_out(by_name[name].pairs, taken[split] | blocked)
            gap = abs(have + len(new) - target[split])
            if gap < abs(have - target[split]) and (best is None or gap < best[0]):
                best = (gap, name, new)
        if best is not None:
            taken[split].update(_key(en) for en, _ in best[2])
            names["train"].remove(best[1])
            names[split].append(best[1])
    for split in SPLITS:
        names[split].sort()
    if not names["train"]:
        raise CorpusError(
            "every catalog went to valid/test; lower --valid-size/--test-size "
            "or raise --max-catalogs"
        )
    return names


def build_corpus(cfg: CorpusConfig) -> Corpus:
    """Read, clean, split and deduplicate; nothing is written."""
    catalogs, skipped = [], {}
    for path in find_catalogs(cfg):
        try:
            catalogs.append(load_catalog(path, cfg))
        except CorpusError as err:
            skipped[path.stem] = str(err)
    if not catalogs:
        raise CorpusError(
            f"none of the catalogs for '{cfg.tgt_lang}' in {cfg.locale_dir} could be read "
            f"(e.g. {next(iter(skipped))}: {next(iter(skipped.values()))})"
        )
    if not any(c.pairs for c in catalogs):
        counts = DropCounts()
        for c in catalogs:
            counts.update(c.counts)
        raise CorpusError(
            f"no usable pairs in the {len(catalogs)} catalogs for '{cfg.tgt_lang}' in "
            f"{cfg.locale_dir} ({', '.join(c.name for c in catalogs[:3])}"
            f"{', ...' if len(catalogs) > 3 else ''}: {counts.summary('entries')}); "
            "fix --tgt-lang or --locale-dir, or relax --min-words/--max-words"
        )
    by_name = {c.name: c for c in catalogs}
    names = assign_splits(catalogs, cfg)

    pairs: Dict[str, List[Pair]] = {}
    split_counts: Dict[str, Dict[str, int]] = {}
    held_out_keys: Set[str] = set()
    for split in HELD_OUT:
        pairs[split], split_counts[split] = [], {}
        for name in names[split]:
            new = _new_held_out(by_name[name].pairs, held_out_keys)
            held_out_keys.update(_key(en) for en, _ in new)
            pairs[split].extend(new)
            split_counts[split][name] = len(new)
        if not pairs[split]:
            raise CorpusError(
                f"the {split} split is empty; use more catalogs (--max-catalogs) "
                f"or a different --seed"
            )

    counts = DropCounts()
    for c in catalogs:
        counts.update(c.counts)
    train: List[Pair] = []
    seen: Set[Pair] = set()
    removed = 0
    split_counts["train"] = {}
    for name in names["train"]:
        kept = 0
        for pair in by_name[name].pairs:
            if _key(pair[0]) in held_out_keys:
                removed += 1
            elif pair in seen:
                counts.drop("duplicate")
            else:
                seen.add(pair)
                train.append(pair)
                kept += 1
        split_counts["train"][name] = kept
    pairs["train"] = train

    mono_en = [en for en, _ in train]
    mono_keys = {_key(en) for en in mono_en} | held_out_keys
    for name in names["train"]:
        for en in by_name[name].extra_en:
            if _key(en) not in mono_keys:
                mono_keys.add(_key(en))
                mono_en.append(en)
    return Corpus(pairs, split_counts, mono_en, skipped, counts, removed)


# --------------------------------------------------------------------------- writing


def write_corpus(corpus: Corpus, cfg: CorpusConfig) -> None:
    """Write the split files, the mono files and catalogs.json into ``cfg.output``, each
    atomically; catalogs.json (what ``veco-gettext-paraphrase`` reads) last, so a run
    stopped half-way leaves none."""
    out, x = cfg.output, cfg.tgt_lang
    if out.exists() and not out.is_dir():
        raise CorpusError(f"--output {out} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    (out / "catalogs.json").unlink(missing_ok=True)
    for split in SPLITS:
        write_lines(str(out / f"{split}.{SRC_LANG}"), (en for en, _ in corpus.pairs[split]))
        write_lines(str(out / f"{split}.{x}"), (t for _, t in corpus.pairs[split]))
    write_lines(str(out / f"mono.{SRC_LANG}"), corpus.mono_en)
    write_lines(str(out / f"mono.{x}"), (t for _, t in corpus.pairs["train"]))
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()}
    report = {
        "src_lang": SRC_LANG,
        "tgt_lang": x,
        "settings": settings,
        "splits": {
            split: {
                "pairs": len(corpus.pairs[split]),
                "catalogs": corpus.catalog_counts[split],
            }
            for split in SPLITS
        },
        "mono": {SRC_LANG: len(corpus.mono_en), x: len(corpus.pairs["train"])},
        "removed_from_train_overlapping_held_out": corpus.removed_from_train,
        "dropped": dict(sorted(corpus.counts.dropped.items())),
        "skipped": corpus.skipped,
    }
    write_text(str(out / "catalogs.json"), json.dumps(report, indent=2, ensure_ascii=False) + "\n")
