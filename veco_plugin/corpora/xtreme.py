"""Sentence(-pair) classification data: the TSVs XTREME users have -> fairseq's
``sentence_prediction`` layout (``veco-prepare-sentence-prediction``).

``--layout`` names the task's family; within it the file's shape is recognised by its
first line (tab-separated, one example a line):

``xnli``
    * 3 columns, ``sentence1, sentence2, label``, no header: XTREME's processed
      ``xnli/{train-en,dev-<lang>}.tsv`` (``scripts/download_data.sh``);
    * the same with a header (its 3rd column ``label``/``gold_label``): XNLI-MT-1.0's
      ``multinli/multinli.train.<lang>.tsv`` (``premise, hypo, label``);
    * XNLI-1.0's ``xnli.{dev,test}.tsv``: a header naming ``language``, ``gold_label``,
      ``sentence1``, ``sentence2`` among its columns, read by name. It holds every
      language: ``language`` picks its rows (a file of several languages and no
      ``language`` is refused, naming them).
    XNLI-MT's label ``contradictory`` reads ``contradiction``, as XTREME writes it.
``pawsx``
    * 4 columns, ``id, sentence1, sentence2, label``, a header: PAWS-X's
      ``x-final/<lang>/{train,dev_2k,test_2k}.tsv`` as released;
    * 3 columns, ``sentence1, sentence2, label``, no header: XTREME's processed
      ``pawsx/{train-en,dev-<lang>}.tsv``.
``single``
    2 columns, ``sentence, label`` (one-sentence tasks; a header line skipped).

XTREME's processed files are written by Python's ``csv`` writer (``utils_preprocess.py``,
tab-separated, ``\\r\\n`` line ends): a sentence holding ``"`` is written quoted, its quotes
doubled (``"say ""hi"" now"``). Here a field of a headerless 3-column file that is exactly
what the writer makes of a text with a quote is read back as that text (XTREME's own
classifier reads these files with ``csv``'s quoting off, so its model sees the quoted form).
A split's language (``--language NAME=LANG``) picks rows only where the file has a
``language`` column; any other file is taken to be in it.

XTREME's processed **test** files have 2 columns (``sentence1, sentence2``): the labels
are stripped for its leaderboard. A pair-layout file whose first line has 2 columns is
refused, saying where labelled copies are (:data:`LABELLED_COPIES`).

Binarized output (``DATA``), one directory per input as fairseq's
``sentence_prediction`` reads it::

    DATA/input0/{split}.{bin,idx} dict.txt    first sentences, sentencepiece pieces
    DATA/input1/...                           second sentences (pair layouts)
    DATA/label/{split}.{bin,idx} dict.txt     labels (dictionary of the train labels,
                                              sorted, so "0" < "1" < ...)
    DATA/trans0/, DATA/trans1/                a split's translation TSV, line-aligned
                                              (plug-in fine-tuning; optional)

Every TSV is read, encoded and checked before anything is written (a line that is not
UTF-8 or has another column count, an empty label or one with a space, a label the train
split lacks, a translation of another length, a ``dict.txt`` that is not the sentencepiece
model's, an existing DATA of other dictionaries); the files appear when all are written.
"""

from __future__ import annotations

import filecmp
import os
import shutil
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import torch
from fairseq.data import Dictionary, indexed_dataset

from ..data.dictionary import load_dictionary
from ..errors import VecoUserError
from ..outputs import check_output_dir, staged_dir
from .subwords import encode_lines, spm_encoder
from .text import BadLine, read_lines


@dataclass(frozen=True)
class Layout:
    """Column indices of one TSV shape (``second`` None: single sentences)."""

    columns: int
    first: int
    second: Optional[int]
    label: int


LAYOUTS: Dict[str, Layout] = {
    "xnli": Layout(columns=3, first=0, second=1, label=2),
    "pawsx": Layout(columns=4, first=1, second=2, label=3),
    "single": Layout(columns=2, first=0, second=None, label=1),
}
# the other shapes a layout's files come in (by column count): XTREME's processed PAWS-X
SHAPES: Dict[str, Dict[int, Layout]] = {
    name: {spec.columns: spec} for name, spec in LAYOUTS.items() if name != "pawsx"
}
SHAPES["pawsx"] = {4: LAYOUTS["pawsx"], 3: LAYOUTS["xnli"]}
XNLI_COLUMNS = ("sentence1", "sentence2", "gold_label")  # XNLI-1.0's, read by name
LANGUAGE = "language"
LABEL_SPELLINGS = {"xnli": {"contradictory": "contradiction"}}  # XTREME's (utils_preprocess)
_HEADER_LABELS = ("label", "gold_label")
BOM = "\ufeff"  # a byte order mark before the first line (files saved by some editors)
LABELLED_COPIES = (
    "labelled copies: PAWS-X x-final/<lang>/test_2k.tsv (storage.googleapis.com/paws/pawsx/"
    "x-final.tar.gz, --layout pawsx), XNLI XNLI-1.0/xnli.test.tsv (dl.fbaipublicfiles.com/XNLI/"
    "XNLI-1.0.zip, --layout xnli, the split's language picked by --language NAME=LANG)"
)
# above this share of <unk> among the train split's pieces, --dict is not --spm-model's
MAX_UNKNOWN = 0.5
CHECKED_LINES = 10000


@dataclass(frozen=True)
class Example:
    first: str
    second: Optional[str]
    label: str


def _row_error(path: str, lineno: int, row: List[str], layout: str, columns: str) -> VecoUserError:
    """A line of ``path`` without the ``columns`` of its ``layout`` file: what it is and
    the fix."""
    where = f"{path}:{lineno}"
    if row == [""]:
        return VecoUserError(
            f"{where}: an empty line (the {layout} layout has {columns} tab-separated "
            "columns): remove it, and its line in a translation TSV"
        )
    fits = [name for name, shapes in SHAPES.items() if len(row) in shapes and name != layout]
    fix = (
        f"is it --layout {fits[0]}?"
        if fits
        else f"fix the line or pick --layout ({', '.join(LAYOUTS)})"
    )
    return VecoUserError(
        f"{where}: {len(row)} tab-separated columns, the {layout} layout has {columns}: {fix}"
    )


def _unlabelled(path: str) -> VecoUserError:
    return VecoUserError(
        f"{path}:1: 2 columns (sentence1, sentence2) and no label, as in XTREME's test files "
        f"(its download strips their labels): give a labelled copy; {LABELLED_COPIES}"
    )


def _label(path: str, lineno: int, text: str, layout: str) -> str:
    """The label of a line: one non-empty token, as fairseq's label dictionary reads it."""
    label = text.strip()
    if not label:
        raise VecoUserError(f"{path}:{lineno}: an empty label: every example needs one")
    if len(label.split()) > 1:
        raise VecoUserError(
            f"{path}:{lineno}: label {label!r} holds a space, and fairseq reads a label as "
            f"one token: join its words (e.g. {'_'.join(label.split())!r}) in every split"
        )
    return LABEL_SPELLINGS.get(layout, {}).get(label, label)


def unquote(field: str) -> str:
    """``field`` as Python's csv writer (``QUOTE_MINIMAL``, ``"``) wrote it, read back: a
    field it quoted (the text holds a ``"``: enclosed in quotes, each inner one doubled)
    becomes the text; any other field is kept as it is."""
    inner = field[1:-1]
    text = inner.replace('""', '"')
    quoted = len(field) > 1 and field[0] == field[-1] == '"' and '"' in text
    return text if quoted and text.replace('"', '""') == inner else field


def _rows(path: str) -> List[Tuple[int, List[str]]]:
    """``(line number, tab-separated fields)`` of every line of ``path``."""
    if os.path.isdir(path):
        raise VecoUserError(f"{path} is a directory: give the TSV file")
    rows = []
    for lineno, line in enumerate(read_lines(path, keep_raw=True), 1):
        if isinstance(line, BadLine):
            raise VecoUserError(line.message("save the file as UTF-8"))
        rows.append((lineno, (line.removeprefix(BOM) if lineno == 1 else line).split("\t")))
    return rows


def _by_name(
    path: str, rows: List[Tuple[int, List[str]]], language: Optional[str]
) -> List[Example]:
    """The examples of an XNLI-1.0 file (a header naming its columns) in ``language``."""
    header = [name.strip() for name in rows[0][1]]
    at = {name: header.index(name) for name in (*XNLI_COLUMNS, LANGUAGE) if name in header}
    first, second, gold = (at[name] for name in XNLI_COLUMNS)
    examples: List[Example] = []
    languages: Dict[Optional[str], None] = {}  # in file order
    for lineno, row in rows[1:]:
        if len(row) != len(header):
            raise VecoUserError(
                f"{path}:{lineno}: {len(row)} tab-separated columns, its header has "
                f"{len(header)}: fix the line"
            )
        lang = row[at[LANGUAGE]].strip() if LANGUAGE in at else None
        languages[lang] = None
        if language is None or lang in (None, language):
            label = _label(path, lineno, row[gold], "xnli")
            examples.append(Example(row[first].strip(), row[second].strip(), label))
    found = ", ".join(str(lang) for lang in languages)
    if language is None and len(languages) > 1:
        raise VecoUserError(
            f"{path} holds {len(languages)} languages ({found}): pick one "
            "(veco-prepare-sentence-prediction --language NAME=LANG)"
        )
    if rows[1:] and not examples:
        raise VecoUserError(f"{path}: no example in {language} (its languages: {found})")
    return examples


def _by_position(path: str, rows: List[Tuple[int, List[str]]], layout: str) -> List[Example]:
    """The examples of a file of one of ``layout``'s column shapes."""
    lineno, row = rows[0]
    spec = SHAPES[layout].get(len(row))
    if spec is None and len(row) == 2 and LAYOUTS[layout].second is not None:
        raise _unlabelled(path)
    if spec is None:
        shapes = " or ".join(str(n) for n in SHAPES[layout])
        raise _row_error(path, lineno, row, layout, shapes)
    header = row[spec.label].strip().lower() in _HEADER_LABELS
    written_by_csv = not header and spec.columns == 3  # XTREME's processed pair TSVs
    examples = []
    for lineno, row in rows[int(header) :]:
        if len(row) != spec.columns:
            has = f"{spec.columns}" + ("" if len(SHAPES[layout]) == 1 else " in this file")
            raise _row_error(path, lineno, row, layout, has)
        if written_by_csv:
            row = [unquote(field) for field in row]
        second = None if spec.second is None else row[spec.second].strip()
        label = _label(path, lineno, row[spec.label], layout)
        examples.append(Example(row[spec.first].strip(), second, label))
    return examples


def read_tsv(path: str, layout: str, language: Optional[str] = None) -> List[Example]:
    """The examples of ``path`` (UTF-8, lines split at ``\\n``, a ``\\r`` before it dropped)
    in one of ``layout``'s shapes (the module's docstring), those in ``language`` where the
    file has a ``language`` column; a missing file, a line that is not UTF-8 or has another
    column count, an unlabelled (XTREME test) file, an empty label or one with a space, and
    a file without examples are a :class:`VecoUserError` naming the file (and the line) and
    the fix."""
    rows = _rows(path)
    if not rows:
        raise VecoUserError(f"{path}: no examples (an empty file)")
    named = layout == "xnli" and set(XNLI_COLUMNS) <= {f.strip() for f in rows[0][1]}
    examples = _by_name(path, rows, language) if named else _by_position(path, rows, layout)
    if not examples:
        raise VecoUserError(f"{path}: no examples (a header only)")
    return examples


def write_tsv(path: str, examples: Sequence[Example]) -> None:
    """``examples`` in the pawsx layout (pairs) or the single layout."""
    with open(path, "w", encoding="utf-8") as f:
        pair = examples[0].second is not None
        f.write("id\tsentence1\tsentence2\tlabel\n" if pair else "sentence\tlabel\n")
        for i, e in enumerate(examples):
            f.write(
                f"{i}\t{e.first}\t{e.second}\t{e.label}\n" if pair else f"{e.first}\t{e.label}\n"
            )


SINGLE_SPECIALS, PAIR_SPECIALS = 2, 4  # <s> a </s>; <s> a </s></s> b </s> (XLM-R's)


def label_dictionary(labels: Sequence[str]) -> Dictionary:
    d = Dictionary()
    for label in sorted(set(labels)):
        d.add_symbol(label)
    return d


def _binarize(lines: Sequence[str], dictionary: Dictionary, prefix: str) -> None:
    rows = (dictionary.encode_line(line, add_if_not_exist=False, append_eos=True) for line in lines)
    binarize_ids(rows, len(dictionary), prefix)


def binarize_ids(rows: Iterable[Sequence[int]], vocab_size: int, prefix: str) -> None:
    """``prefix.{bin,idx}``: fairseq's mmap indexed dataset of ``rows`` of ids."""
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    builder = indexed_dataset.make_builder(prefix + ".bin", impl="mmap", vocab_size=vocab_size)
    for ids in rows:
        builder.add_item(torch.IntTensor(list(ids)))
    builder.finalize(prefix + ".idx")


@dataclass
class Split:
    """A split read and checked: its examples and their line-aligned translations."""

    tsv: str
    examples: List[Example]
    translated: Optional[List[Example]]


def read_splits(
    splits: Dict[str, Tuple[str, Optional[str]]],
    layout: str,
    languages: Optional[Mapping[str, str]] = None,
) -> Dict[str, Split]:
    """Every TSV of ``splits`` read (:func:`read_tsv`, a split's rows in its language of
    ``languages`` where its file names languages) and checked against the train split:
    two labels or more there, no other label elsewhere, translations line-aligned."""
    if "train" not in splits:
        raise VecoUserError("--split train=TSV is needed (the label dictionary comes from it)")
    languages = languages or {}
    unknown = sorted(set(languages) - set(splits))
    if unknown:
        raise VecoUserError(
            f"--language {unknown[0]}={languages[unknown[0]]}: no --split {unknown[0]}=...: "
            "name a split"
        )
    read = {}
    for name, (tsv, translation) in splits.items():
        examples = read_tsv(tsv, layout, languages.get(name))
        translated = read_tsv(translation, layout, languages.get(name)) if translation else None
        if translated is not None and len(translated) != len(examples):
            raise VecoUserError(
                f"{translation}: {len(translated)} examples, {tsv} has {len(examples)}: "
                "a translation TSV must be line-aligned with its split"
            )
        read[name] = Split(tsv, examples, translated)
    train = read["train"]
    labels = sorted({e.label for e in train.examples})
    if len(labels) < 2:
        raise VecoUserError(
            f"{train.tsv}: every example is labelled {labels[0]!r}: a classifier needs two "
            "labels or more in the train split"
        )
    for split in read.values():
        unknown = sorted({e.label for e in split.examples} - set(labels))
        if unknown:
            raise VecoUserError(
                f"{split.tsv}: label {unknown[0]!r} does not occur in the train split "
                f"{train.tsv} ({', '.join(labels)})"
            )
    return read


def load_tokens(dictionary: str) -> Dictionary:
    """The token dictionary (``--dict``)."""
    try:
        return load_dictionary(dictionary)
    except VecoUserError as exc:
        raise VecoUserError(f"--dict {exc}") from None


def check_dictionary(lines: Sequence[str], tokens: Dictionary, spm_model: str, dictionary: str):
    """Refuse a dictionary that is not the sentencepiece model's: most of the pieces of
    ``lines`` (the train split's, encoded; the first :data:`CHECKED_LINES`) would read as
    ``<unk>``."""
    pieces = [p for line in lines[:CHECKED_LINES] for p in line.split()]
    unknown = [p for p in pieces if tokens.index(p) == tokens.unk()]
    if len(unknown) > MAX_UNKNOWN * len(pieces):
        raise VecoUserError(
            f"--dict {dictionary}: {len(unknown)} of the {len(pieces)} pieces --spm-model "
            f"{spm_model} makes of the train split are not in it (e.g. {unknown[0]!r}): give "
            "the dict.txt that goes with this sentencepiece model (the checkpoint's)"
        )


def check_existing(output: str, dictionary: str, labels: Dictionary) -> None:
    """Splits added to an existing DATA share its dictionaries: refuse a ``--dict`` other
    than the one its splits were binarized with, and a train split with other labels."""
    tokens = os.path.join(output, "input0", "dict.txt")
    if os.path.isfile(tokens) and not filecmp.cmp(tokens, dictionary, shallow=False):
        raise VecoUserError(
            f"--output {output} holds splits binarized with another dictionary than --dict "
            f"{dictionary} ({tokens}): give a new --output, or that --dict"
        )
    known = os.path.join(output, "label", "dict.txt")
    if os.path.isfile(known):
        old = load_dictionary(known).symbols[labels.nspecial :]
        new = labels.symbols[labels.nspecial :]
        if old != new:
            raise VecoUserError(
                f"--output {output} holds splits labelled {', '.join(old)} ({known}); this train "
                f"split has {', '.join(new)}: give a new --output"
            )


def cut_pair(first: str, second: Optional[str], max_length: int) -> Tuple[str, Optional[str]]:
    """The pieces (space-separated) of an example cut as XTREME cuts it to ``max_length``
    positions (``processors/utils.py:122-124``: transformers' ``encode_plus``, truncation
    ``longest_first``): one piece at a time off the end of the longer side, the second on
    ties, until ``<s> first </s></s> second </s>`` (``<s> first </s>``) fits. Both sides
    keep a piece at least."""
    a, b = first.split(), second.split() if second is not None else None
    if b is None:
        return " ".join(a[: max(max_length - SINGLE_SPECIALS, 1)]), None
    kept = [len(a), len(b)]
    for _ in range(len(a) + len(b) + PAIR_SPECIALS - max_length):
        longer = 0 if kept[0] > kept[1] else 1
        if kept[longer] == 1:
            break
        kept[longer] -= 1
    return " ".join(a[: kept[0]]), " ".join(b[: kept[1]])


def _cut(encoded: Dict[Tuple[str, str, int], List[str]], max_length: int) -> None:
    """Every example of ``encoded`` (``(key, split, side) -> lines``) cut by :func:`cut_pair`."""
    for key, name, _ in [k for k in encoded if k[2] == 0]:
        firsts, seconds = encoded[key, name, 0], encoded.get((key, name, 1))
        if seconds is None:
            encoded[key, name, 0] = [cut_pair(f, None, max_length)[0] for f in firsts]
            continue
        pairs = [cut_pair(f, s, max_length) for f, s in zip(firsts, seconds)]
        encoded[key, name, 0] = [f for f, _ in pairs]
        encoded[key, name, 1] = [s or "" for _, s in pairs]


def prepare(
    output: str,
    splits: Dict[str, Tuple[str, Optional[str]]],
    layout: str,
    spm_model: str,
    dictionary: str,
    languages: Optional[Mapping[str, str]] = None,
    max_length: int = 0,
) -> Dict[str, Dict[str, int]]:
    """Binarize ``splits`` (name -> (TSV, translation TSV or None)) into ``output``;
    the label dictionary comes from the ``train`` split; ``languages`` (name -> language)
    picks a split's rows from a file of several languages (XNLI-1.0's); ``max_length``
    (0: none) cuts every example to that many positions (:func:`cut_pair`). Returns per
    split the example count and the label counts.

    Everything is read, encoded and checked before anything is written; ``output``'s files
    appear only once all are written (:func:`..outputs.staged_dir`)."""
    check_output_dir(output, "--output")
    read = read_splits(splits, layout, languages)
    tokens = load_tokens(dictionary)
    encode = spm_encoder(spm_model)
    encoded: Dict[Tuple[str, str, int], List[str]] = {}
    for name, split in read.items():
        for key, rows in (("input", split.examples), ("trans", split.translated)):
            if rows is None:
                continue
            encoded[key, name, 0] = encode_lines(encode, [e.first for e in rows])
            if rows[0].second is not None:
                encoded[key, name, 1] = encode_lines(encode, [e.second or "" for e in rows])
    check_dictionary(encoded["input", "train", 0], tokens, spm_model, dictionary)
    if max_length:
        _cut(encoded, max_length)
    labels = label_dictionary([e.label for e in read["train"].examples])
    check_existing(output, dictionary, labels)
    with staged_dir(output) as stage:
        for key in ("input0", "input1", "trans0", "trans1"):
            os.makedirs(os.path.join(stage, key))
            shutil.copyfile(dictionary, os.path.join(stage, key, "dict.txt"))
        os.makedirs(os.path.join(stage, "label"))
        labels.save(os.path.join(stage, "label", "dict.txt"))
        for (key, name, side), lines in encoded.items():
            _binarize(lines, tokens, os.path.join(stage, f"{key}{side}", name))
        for name, split in read.items():
            _binarize([e.label for e in split.examples], labels, os.path.join(stage, "label", name))
    return {name: _counts(split.examples, labels) for name, split in read.items()}


def _counts(examples: Sequence[Example], labels: Dictionary) -> Dict[str, int]:
    counts = {"examples": len(examples)}
    for label in labels.symbols[labels.nspecial :]:
        counts[f"label_{label}"] = sum(e.label == label for e in examples)
    return counts
