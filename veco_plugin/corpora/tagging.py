"""Word-tagged sentences as published: CoNLL-U treebanks and XTREME's ``word<TAB>tag`` TSVs.

* **CoNLL-U** (Universal Dependencies, ``*.conllu``): ten tab-separated columns a word
  line, ``#`` comment lines, a blank line after each sentence; the tag is the UPOS column
  (the 4th). Read as XTREME's ``udpos`` download converts it
  (:mod:`veco_plugin.corpora.ud_xtreme`): a multiword token (``3-4 zum``) is one word, its
  surface form, tagged by the converter's rules for the file's language; empty nodes
  (``8.1``) are no words; a sentence of ``_`` words (a treebank without its text) is
  dropped; ZWNJ and spaces inside words are removed. Several files of a language (its
  treebanks) are pooled in order, as XTREME pools them.
* **Labelled TSV** (XTREME's ``udpos``/``panx`` layout, e.g. salesforce/MPT
  ``data/udpos/train-en.tsv``): ``word<TAB>tag`` a line, a blank line between sentences;
  BIO tags (``B-PER``) read the same way. XTREME's download script strips the test
  labels for its leaderboard: a line with a word and no tag is refused, saying where
  labelled copies are.
* **PAN-X as published** (the per-language ``train``/``dev``/``test`` files of the archives
  XTREME's download unpacks from ``AmazonPhotos.zip``): ``lang:word<TAB>BIO-tag``, e.g.
  ``en:Paris<TAB>B-LOC``. A file whose first word carries such a prefix has it on every
  word; it is cut off at its colon, with the whitespace around the word, as XTREME's
  ``utils_preprocess.py`` (``--task panx``) cuts it. Test labels are kept there.
* **XTREME's predictions and labels** (``predictions/<task>/test-<lang>.tsv``, the mock
  files of ``mock_test_data``): one tag a line, a blank line after each sentence, read as
  XTREME's ``evaluate.py`` reads them.

A file in another shape is one line naming the file, line and fix.
"""

import os
import re
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ..errors import VecoUserError
from .text import BadLine, read_lines
from .ud_xtreme import ConverterFailure, conllu_language, spans, xtreme_words

CONLLU_COLUMNS = 10
UPOS = 3
CONLLU_ID = re.compile(r"\d+(?:-\d+|\.\d+)?")  # a word, a multiword range, an empty node
BOM = "\ufeff"
LABELLED_COPIES = (
    "labelled copies: the Universal Dependencies treebanks (CoNLL-U, github.com/"
    "UniversalDependencies/UD_<Language>-<Treebank>) or XTREME-style files kept with their "
    "labels (e.g. github.com/salesforce/MPT data/udpos/)"
)
# PAN-X's language prefix of a word (``en:``, ``zh-yue:``): up to its first colon
PANX_PREFIX = re.compile(r"[a-z]{2,3}(?:-[a-z0-9]+)*:")
PANX_COPIES = (
    "for PAN-X, the per-language archives of XTREME's AmazonPhotos.zip (lang:word<TAB>tag, "
    "test labels kept)"
)


@dataclass(frozen=True)
class TaggedSentence:
    """``words`` and their ``tags``, equally many; ``where``: ``FILE:LINE`` of its first word."""

    words: Tuple[str, ...]
    tags: Tuple[str, ...]
    where: str


def is_conllu(path: str) -> bool:
    return path.endswith((".conllu", ".conllu.gz"))


def _lines(path: str):
    if os.path.isdir(path):
        raise VecoUserError(f"{path} is a directory: give a .conllu or word<TAB>tag file")
    for lineno, line in enumerate(read_lines(path, keep_raw=True), 1):
        if isinstance(line, BadLine):
            raise VecoUserError(line.message("save the file as UTF-8"))
        yield lineno, (line.removeprefix(BOM) if lineno == 1 else line)


def _sentences(path: str, word: Callable[[int, str], Optional[Tuple[str, str]]]):
    """The sentences of ``path``: blank lines end them, ``word(lineno, line)`` reads a
    line's (word, tag), None for a line that holds none."""
    sentences: List[TaggedSentence] = []
    words: List[str] = []
    tags: List[str] = []
    start = 0
    for lineno, line in _lines(path):
        if not line.strip():
            if words:
                sentences.append(TaggedSentence(tuple(words), tuple(tags), f"{path}:{start}"))
                words, tags = [], []
            continue
        read = word(lineno, line)
        if read is None:
            continue
        if not words:
            start = lineno
        words.append(read[0])
        tags.append(read[1])
    if words:
        sentences.append(TaggedSentence(tuple(words), tuple(tags), f"{path}:{start}"))
    return sentences


def conllu_rows(path: str) -> Iterator[Tuple[int, List[List[str]]]]:
    """(line of its first token, its token lines split into columns) for each sentence of
    CoNLL-U file ``path``, multiword ranges and empty nodes included."""
    rows: List[List[str]] = []
    start = 0
    for lineno, line in _lines(path):
        if not line.strip():
            if rows:
                yield start, rows
            rows = []
            continue
        if line.startswith("#"):
            continue
        row = line.split("\t")
        if len(row) != CONLLU_COLUMNS or not CONLLU_ID.fullmatch(row[0]):
            raise VecoUserError(
                f"{path}:{lineno}: {len(row)} tab-separated columns, CoNLL-U has "
                f"{CONLLU_COLUMNS}, the first a word's number (here {row[0]!r}): give a CoNLL-U "
                "file (or a word<TAB>tag file not named *.conllu)"
            )
        if row[0].isdigit() and (not row[UPOS] or row[UPOS] == "_"):
            raise VecoUserError(
                f"{path}:{lineno}: word {row[1]!r} has no UPOS tag (column 4 reads "
                f"{row[UPOS]!r}): an unannotated file; {LABELLED_COPIES}"
            )
        start = start if rows else lineno
        rows.append(row)
    if rows:
        yield start, rows


def conllu_sentences(path: str, lang: Optional[str] = None) -> List[TaggedSentence]:
    """The sentences XTREME's ``udpos`` download makes of CoNLL-U file ``path``, with
    ``lang``'s rules (default: the file name's language, as XTREME's); raises
    :class:`~veco_plugin.corpora.ud_xtreme.ConverterFailure` where XTREME's converter
    stops (XTREME's data then lacks the whole file)."""
    lang = conllu_language(path) if lang is None else lang
    sentences = []
    for start, rows in conllu_rows(path):
        read = xtreme_words(rows, lang)
        if read is not None:
            sentences.append(TaggedSentence(read[0], read[1], f"{path}:{start}"))
    return sentences


def read_conllu(path: str, lang: Optional[str] = None) -> List[TaggedSentence]:
    """The sentences of a CoNLL-U file, tagged with UPOS, as :func:`conllu_sentences`
    makes them; a file XTREME's converter stops on is one line saying so."""
    try:
        return conllu_sentences(path, lang)
    except ConverterFailure as exc:
        raise VecoUserError(
            f"{path}: {exc}: XTREME's udpos converter stops on this file, so XTREME's data "
            "lacks it; leave it out as XTREME does (veco-prepare-udpos does)"
        ) from None


def read_tagged_tsv(path: str) -> List[TaggedSentence]:
    """The sentences of a ``word<TAB>tag`` file (blank lines between sentences), PAN-X's
    ``lang:word<TAB>tag`` with the language prefix cut off."""
    prefix: List[str] = []  # the file's PAN-X prefix ("" for none), read at its first word

    def word(lineno: int, line: str) -> Tuple[str, str]:
        row = line.split("\t")
        if len(row) == 1 or (len(row) == 2 and not row[1].strip()):
            raise VecoUserError(
                f"{path}:{lineno}: word {row[0]!r} has no tag: an unlabelled file (XTREME's "
                f"download script strips the test labels); {LABELLED_COPIES}; {PANX_COPIES}"
            )
        if len(row) != 2 or not row[0] or " " in row[1].strip():
            raise VecoUserError(
                f"{path}:{lineno}: {len(row)} tab-separated columns {row[:3]!r}: a tagged "
                "file has word<TAB>tag a line and a blank line between sentences"
            )
        if not prefix:
            found = PANX_PREFIX.match(row[0])
            prefix.append(found.group() if found else "")
        return _panx_word(path, lineno, row[0], prefix[0]), row[1].strip()

    return _sentences(path, word)


def _panx_word(path: str, lineno: int, word: str, prefix: str) -> str:
    """``word`` without PAN-X's language ``prefix`` and the whitespace around it (as
    XTREME's ``utils_preprocess.py`` cuts it); ``word`` itself where ``prefix`` is empty."""
    if not prefix:
        return word
    if not word.startswith(prefix) or not word[len(prefix) :].strip():
        raise VecoUserError(
            f"{path}:{lineno}: {word!r} is not {prefix}WORD as the file's first word is: "
            "PAN-X's files prefix every word with its language (lang:word<TAB>tag); give one "
            "language's file as published"
        )
    return word[len(prefix) :].strip()


def read_tag_lines(path: str) -> List[List[str]]:
    """The sentences of tags of an XTREME prediction or label file (one tag a line, a blank
    line after each sentence), as XTREME's ``evaluate.py`` reads them: lines stripped, each
    blank line ends a sentence (two in a row: an empty one), a last one without it kept."""
    sentences: List[List[str]] = []
    tags: List[str] = []
    for lineno, line in _lines(path):
        tag = line.strip()
        if not tag:
            sentences.append(tags)
            tags = []
        elif "\t" in tag or " " in tag:
            raise VecoUserError(
                f"{path}:{lineno}: {tag!r} is not one tag: XTREME's prediction and label "
                "files hold one tag a line (read word<TAB>tag files as tagged files)"
            )
        else:
            tags.append(tag)
    if tags:
        sentences.append(tags)
    return sentences


def read_tagged(paths: Sequence[str]) -> List[TaggedSentence]:
    """The sentences of every file of ``paths`` in order (a language's treebanks pooled),
    each read by its format (``*.conllu``: CoNLL-U, else ``word<TAB>tag``)."""
    sentences: List[TaggedSentence] = []
    for path in paths:
        read = read_conllu(path) if is_conllu(path) else read_tagged_tsv(path)
        if not read:
            raise VecoUserError(f"{path}: no sentences (an empty file)")
        sentences.extend(read)
    return sentences


def format_tagged_tsv(sentences: Sequence[TaggedSentence]) -> str:
    """``sentences`` as ``word<TAB>tag`` text (a blank line after each sentence)."""
    return "".join(
        "".join(f"{w}\t{t}\n" for w, t in zip(s.words, s.tags)) + "\n" for s in sentences
    )


def format_conllu_like(path: str, tags: Sequence[Sequence[str]]) -> str:
    """CoNLL-U file ``path`` with the UPOS column of its words replaced by ``tags`` (one
    sequence per sentence, as :func:`read_conllu` reads them): every word of a multiword
    token takes the token's tag; a sentence :func:`read_conllu` drops, and every other line
    and column, stay as published."""
    lang = conllu_language(path)
    by_word: List[Optional[Dict[int, str]]] = []  # per sentence: word number -> tag
    kept = iter(tags)
    for _, rows in conllu_rows(path):
        if xtreme_words(rows, lang) is None:
            by_word.append(None)
            continue
        spans_tags = zip(spans(rows), next(kept))
        by_word.append({w: t for (a, b, _), t in spans_tags for w in range(a, b + 1)})
    out = []
    sentence, in_sentence = 0, False
    for _, line in _lines(path):
        row = line.split("\t")
        if not line.strip():
            sentence, in_sentence = sentence + in_sentence, False
        elif not line.startswith("#"):
            in_sentence = True
            new = by_word[sentence]
            if new is not None and row[0].isdigit():
                row[UPOS] = new[int(row[0])]
                line = "\t".join(row)
        out.append(line + "\n")
    return "".join(out)
