"""A TEXT folder of real multilingual text for ``veco-prepare-pretraining``: English,
German, French and Spanish from the system's gettext catalogs.

:func:`gettext_corpora` builds the En-De, En-Fr and En-Es corpora of
``veco_plugin.corpora.gettext`` once (about 2 s each, in-process); :func:`make_text`
lays part of them out as ``veco-prepare-pretraining`` reads them, with every kind of
file (plain, ``.gz``, ``.xz``; several documents per corpus) and a few empty segments
that the preparation must drop and count.
"""

import glob
import gzip
import lzma
from pathlib import Path
from typing import List

LANGS = ("de", "fr", "es")  # each paired with English
EMPTY = ["", "   \t "]  # dropped ("empty") wherever they are


def has_catalogs() -> bool:
    return all(glob.glob(f"/usr/share/locale/{x}/LC_MESSAGES/*.mo") for x in LANGS)


def gettext_corpora(out: Path) -> None:
    """``out/<x>/{train.en,train.<x>,mono.en}`` for x in de, fr, es."""
    from veco_plugin.corpora.gettext import CorpusConfig, build_corpus
    from veco_plugin.corpora.text import write_lines

    for x in LANGS:
        corpus = build_corpus(CorpusConfig(tgt_lang=x, output=out / x))
        (out / x).mkdir(parents=True)
        write_lines(str(out / x / "train.en"), (en for en, _ in corpus.pairs["train"]))
        write_lines(str(out / x / f"train.{x}"), (t for _, t in corpus.pairs["train"]))
        write_lines(str(out / x / "mono.en"), corpus.mono_en)


def _read(path: Path, start: int, stop: int) -> List[str]:
    return path.read_text(encoding="utf-8").split("\n")[start:stop]


def _write(path: Path, lines: List[str]) -> None:
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.endswith(".gz"):
        data = gzip.compress(data)
    elif path.name.endswith(".xz"):
        data = lzma.compress(data)
    path.write_bytes(data)


def make_text(corpora: Path, text: Path, lines: int) -> Path:
    """TEXT with ``lines`` lines per monolingual file and ``lines`` pairs per pair
    (monolingual German, French, Spanish from other catalog entries than the pairs)::

        mono/en/a.txt b.txt.gz   mono/<x>/gettext.txt.xz
        bi/en-<x>/gettext.en + gettext.<x>.gz   (en-de also part2.en.xz + part2.de)
    """
    de = corpora / "de"
    _write(text / "mono/en/a.txt", _read(de / "mono.en", 0, lines))
    _write(text / "mono/en/b.txt.gz", EMPTY + _read(corpora / "fr/mono.en", 0, lines))
    for x in LANGS:
        train = corpora / x
        _write(text / f"mono/{x}/gettext.txt.xz", _read(train / f"train.{x}", lines, 2 * lines))
        en, other = _read(train / "train.en", 0, lines), _read(train / f"train.{x}", 0, lines)
        en[7], other[9] = "", " "  # two pairs with an empty side
        _write(text / f"bi/en-{x}/gettext.en", en)
        _write(text / f"bi/en-{x}/gettext.{x}.gz", other)
    half = lines // 2
    _write(text / "bi/en-de/part2.en.xz", _read(de / "train.en", 2 * lines, 2 * lines + half))
    _write(text / "bi/en-de/part2.de", _read(de / "train.de", 2 * lines, 2 * lines + half))
    return text
