"""The input folder: which corpora TEXT holds.

::

    TEXT/mono/<lang>/*.txt[.gz|.xz]          any number of files per language
    TEXT/bi/<src>-<tgt>/<name>.<src>[.gz|.xz] and <name>.<tgt>[.gz|.xz]

A corpus is one language's monolingual text or one pair's parallel text; its documents
(files, or file pairs) are read in sorted order. Language codes are letters, digits,
``_`` and ``@`` (``-`` joins a pair, ``.`` separates suffixes).
"""

import logging
import os
import re
from dataclasses import dataclass
from typing import Dict, List, Tuple

from ..errors import VecoUserError

COMPRESSED = (".gz", ".xz")
_LANG = re.compile(r"^[A-Za-z0-9_@]+$")
logger = logging.getLogger(__name__)
LAYOUT = "TEXT/mono/<lang>/*.txt[.gz|.xz] or TEXT/bi/<src>-<tgt>/<name>.<src> + <name>.<tgt>"


@dataclass(frozen=True)
class Corpus:
    """One language's monolingual text (``mono``, langs ``(l,)``, one path a document)
    or one pair's parallel text (``bi``, langs ``(src, tgt)``, a path per side)."""

    kind: str
    name: str
    langs: Tuple[str, ...]
    documents: Tuple[Tuple[str, ...], ...]

    @property
    def where(self) -> str:
        """``mono/en`` or ``bi/en-de``: its folder under TEXT and under each shard."""
        return f"{self.kind}/{self.name}"


def _strip_compression(name: str) -> str:
    for suffix in COMPRESSED:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _visible(folder: str) -> List[str]:
    return sorted(n for n in os.listdir(folder) if not n.startswith("."))


def _ignored(folder: str, names: List[str], expected: str) -> None:
    if names:
        logger.warning(f"{folder}: ignored {', '.join(names)} (not {expected})")


def _check_lang(lang: str, folder: str) -> None:
    if not _LANG.match(lang):
        raise VecoUserError(
            f"{folder}: {lang!r} is not a language code (letters, digits, _ and @); "
            f"expected {LAYOUT}"
        )


def _mono(text: str) -> List[Corpus]:
    root = os.path.join(text, "mono")
    corpora = []
    for lang in _visible(root) if os.path.isdir(root) else []:
        folder = os.path.join(root, lang)
        if not os.path.isdir(folder):
            continue
        _check_lang(lang, folder)
        names = _visible(folder)
        files = [
            os.path.join(folder, n)
            for n in names
            if _strip_compression(n).endswith(".txt") and os.path.isfile(os.path.join(folder, n))
        ]
        _ignored(folder, [n for n in names if os.path.join(folder, n) not in files], "*.txt")
        if not files:
            raise VecoUserError(f"{folder} holds no *.txt, *.txt.gz or *.txt.xz file")
        corpora.append(Corpus("mono", lang, (lang,), tuple((f,) for f in files)))
    return corpora


def _pair_documents(folder: str, src: str, tgt: str) -> Tuple[Tuple[str, ...], ...]:
    sides: Dict[str, Dict[str, str]] = {}  # name -> lang -> path
    ignored = []
    for n in _visible(folder):
        stem, _, lang = _strip_compression(n).rpartition(".")
        if not (lang in (src, tgt) and stem and os.path.isfile(os.path.join(folder, n))):
            ignored.append(n)
        elif lang in sides.setdefault(stem, {}):
            raise VecoUserError(
                f"{folder}: {sides[stem][lang]} and {n} are both {stem}.{lang}; keep one"
            )
        else:
            sides[stem][lang] = n
    _ignored(folder, ignored, f"<name>.{src} or <name>.{tgt}")
    if not sides:
        raise VecoUserError(f"{folder} holds no <name>.{src} + <name>.{tgt} file pair")
    documents = []
    for stem, found in sorted(sides.items()):
        for lang, other in ((src, tgt), (tgt, src)):
            if lang not in found:
                raise VecoUserError(
                    f"{os.path.join(folder, found[other])} has no translation "
                    f"{os.path.join(folder, f'{stem}.{lang}')}[.gz|.xz]: each <name>.{src} "
                    f"needs its <name>.{tgt}, line by line"
                )
        documents.append(tuple(os.path.join(folder, found[lang]) for lang in (src, tgt)))
    return tuple(documents)


def _bi(text: str) -> List[Corpus]:
    root = os.path.join(text, "bi")
    corpora = []
    for pair in _visible(root) if os.path.isdir(root) else []:
        folder = os.path.join(root, pair)
        if not os.path.isdir(folder):
            continue
        langs = pair.split("-")
        if len(langs) != 2 or langs[0] == langs[1]:
            raise VecoUserError(
                f"{folder}: a pair folder is named <src>-<tgt> with two different "
                "languages, e.g. en-de"
            )
        for lang in langs:
            _check_lang(lang, folder)
        corpora.append(Corpus("bi", pair, tuple(langs), _pair_documents(folder, *langs)))
    return corpora


def find_corpora(text: str) -> List[Corpus]:
    """Every corpus of ``text`` (monolingual first, each kind sorted by name)."""
    if not os.path.isdir(text):
        raise VecoUserError(f"--text {text}: no such directory; expected {LAYOUT}")
    corpora = _mono(text) + _bi(text)
    if not corpora:
        raise VecoUserError(f"--text {text} holds no text: expected {LAYOUT}")
    return corpora
