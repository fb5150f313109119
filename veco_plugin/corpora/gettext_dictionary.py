"""A real English-X bilingual word list from the gettext catalogs
(``veco-gettext-dictionary``), for ALIGN-MLM's dictionary loss and its alignment score.

The catalogs hold thousands of single-word entries translated by people (``File`` ->
``Datei``, ``Print`` -> ``Drucken``). Every entry is cleaned as the corpus builder
cleans it (:func:`veco_plugin.corpora.gettext.clean_pair`: whitespace, keyboard
accelerators, untranslated, noise); then both sides must be one word once edge
punctuation is stripped (``File:`` -> ``File``, ``Open…`` -> ``Open``); words are
lowercased unless ``--keep-case`` (MUSE dictionaries are lowercase). A word may have
several translations: each distinct (source, target) pair is one line.

Split by source word: the distinct English words are shuffled with ``--seed`` and the
first ``--held-out-words`` go to ``heldout.txt`` with all their translations, the rest to
``train.txt``; no English word is in both. Output (MUSE layout, ``src tgt`` per line,
sorted)::

    OUT/train.txt  OUT/heldout.txt  OUT/dictionary.json (counts, drop reasons, settings)
"""

import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

from ..outputs import write_text
from .gettext import (
    _EDGE_PUNCT,
    _WORD,
    CorpusConfig,
    CorpusError,
    clean_pair,
    find_catalogs,
    read_catalog,
)
from .text import DropCounts, write_lines

WordPair = Tuple[str, str]
SPLITS = ("train", "heldout")


@dataclass(frozen=True)
class DictionaryConfig:
    """All settings of one dictionary build (built once from the command line, whose
    flags are these fields: :func:`veco_plugin.cli.config_flags.add_config_flags`)."""

    tgt_lang: str = field(metadata={"help": "target language code, e.g. de or fr"})
    output: Path = field(metadata={"help": "output directory"})
    locale_dir: Path = field(
        default=Path("/usr/share/locale"),
        metadata={"help": "directory holding <lang>/LC_MESSAGES/*.mo (default: %(default)s)"},
    )
    held_out_words: int = field(
        default=500,
        metadata={
            "help": "English words held out with all their translations (default: %(default)s)"
        },
    )
    seed: int = field(default=1, metadata={"help": "split seed"})
    keep_case: bool = field(
        default=False, metadata={"help": "keep the catalogs' case (default: lowercase)"}
    )


@dataclass
class BilingualDictionary:
    """The split word pairs and how the entries were used."""

    pairs: Dict[str, List[WordPair]]
    counts: DropCounts
    catalogs: int
    skipped: Dict[str, str]


def cleaning_config(cfg: DictionaryConfig) -> CorpusConfig:
    """The corpus builder's cleaning settings for one-word entries."""
    return CorpusConfig(cfg.tgt_lang, cfg.output, cfg.locale_dir, min_words=1)


def word_pair(
    msgid: str, msgstr: str, cfg: DictionaryConfig, cleaning: CorpusConfig
) -> Tuple[WordPair, Optional[str]]:
    """One catalog entry as a (source word, target word) pair, or the reason it is not
    one: the corpus builder's reasons (``cleaning``), or ``not_a_word`` (several
    tokens, digits, symbols on either side)."""
    (en, x), reason = clean_pair(msgid, msgstr, cleaning)
    en, x = en.strip(_EDGE_PUNCT + " "), x.strip(_EDGE_PUNCT + " ")
    if not cfg.keep_case:
        en, x = en.lower(), x.lower()
    if reason is None and not (_WORD.match(en) and _WORD.match(x)):
        reason = "not_a_word"
    if reason is None and en == x:
        reason = "untranslated"
    return (en, x), reason


def split_by_word(
    pairs: Set[WordPair], held_out_words: int, seed: int
) -> Dict[str, List[WordPair]]:
    """``train``/``heldout`` pairs: the first ``held_out_words`` English words of a seeded
    shuffle (with every translation of each) are held out; both lists sorted."""
    words = sorted({en for en, _ in pairs})
    random.Random(seed).shuffle(words)
    held = set(words[:held_out_words])
    return {
        "train": sorted(p for p in pairs if p[0] not in held),
        "heldout": sorted(p for p in pairs if p[0] in held),
    }


def build_dictionary(cfg: DictionaryConfig) -> BilingualDictionary:
    """Read every catalog of ``cfg.tgt_lang`` and split its word pairs."""
    if cfg.held_out_words < 0:
        raise CorpusError(f"--held-out-words must be >= 0, got {cfg.held_out_words}")
    cleaning = cleaning_config(cfg)
    paths = find_catalogs(cleaning)
    counts, skipped, pairs = DropCounts(), {}, set()
    for path in paths:
        try:
            entries = read_catalog(path)
        except CorpusError as err:
            skipped[path.stem] = str(err)
            continue
        for msgid, msgstr in entries:
            pair, reason = word_pair(msgid, msgstr, cfg, cleaning)
            if reason is None and pair in pairs:
                reason = "duplicate"
            counts.read += 1
            if counts.keep(reason):
                pairs.add(pair)
    where = f"the {len(paths)} catalogs for '{cfg.tgt_lang}' in {cfg.locale_dir}"
    if len(skipped) == len(paths):
        raise CorpusError(
            f"none of {where} could be read (e.g. {next(iter(skipped))}: "
            f"{next(iter(skipped.values()))})"
        )
    if not pairs:
        raise CorpusError(
            f"no single-word entries in {where} ({counts.summary('entries')}); "
            "fix --tgt-lang or --locale-dir"
        )
    words = len({en for en, _ in pairs})
    if cfg.held_out_words >= words:
        raise CorpusError(
            f"--held-out-words {cfg.held_out_words} would hold out all {words} English "
            f"words and leave train.txt empty; pass at most {words - 1}"
        )
    return BilingualDictionary(
        split_by_word(pairs, cfg.held_out_words, cfg.seed), counts, len(paths), skipped
    )


def write_dictionary(dictionary: BilingualDictionary, cfg: DictionaryConfig) -> None:
    """``train.txt``, ``heldout.txt`` and ``dictionary.json`` in ``cfg.output``, each
    written atomically."""
    out = cfg.output
    if out.exists() and not out.is_dir():
        raise CorpusError(f"--output {out} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    for split in SPLITS:
        write_lines(str(out / f"{split}.txt"), (f"{en} {x}" for en, x in dictionary.pairs[split]))
    report = {
        "src_lang": "en",
        "tgt_lang": cfg.tgt_lang,
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()},
        "splits": {
            split: {
                "pairs": len(dictionary.pairs[split]),
                "words": len({en for en, _ in dictionary.pairs[split]}),
            }
            for split in SPLITS
        },
        "entries": dictionary.counts.as_dict(),
        "catalogs": dictionary.catalogs,
        "skipped": dictionary.skipped,
    }
    write_text(
        str(out / "dictionary.json"), json.dumps(report, indent=2, ensure_ascii=False) + "\n"
    )
