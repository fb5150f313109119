"""Sentence(-pair) classification data: XTREME TSV layouts -> fairseq's
``sentence_prediction`` layout (``veco-prepare-sentence-prediction``).

Layouts (tab-separated, one example a line; a header line is recognised by its label
column reading ``label``/``gold_label`` and skipped):

    xnli    premise, hypothesis, label        (XTREME's XNLI / MultiNLI TSVs)
    pawsx   id, sentence1, sentence2, label   (PAWS-X)
    single  sentence, label                   (one-sentence tasks)

Binarized output (``DATA``), one directory per input as fairseq's
``sentence_prediction`` reads it::

    DATA/input0/{split}.{bin,idx} dict.txt    first sentences, sentencepiece pieces
    DATA/input1/...                           second sentences (pair layouts)
    DATA/label/{split}.{bin,idx} dict.txt     labels (dictionary of the train labels,
                                              sorted, so "0" < "1" < ...)
    DATA/trans0/, DATA/trans1/                a split's translation TSV, line-aligned
                                              (plug-in fine-tuning; optional)
"""

from __future__ import annotations

import csv
import os
import shutil
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import torch
from fairseq.data import Dictionary, indexed_dataset

from ..errors import VecoUserError
from .subwords import encode_lines, spm_encoder


@dataclass(frozen=True)
class Layout:
    """Column indices of one TSV layout (``second`` None: single sentences)."""

    columns: int
    first: int
    second: Optional[int]
    label: int


LAYOUTS: Dict[str, Layout] = {
    "xnli": Layout(columns=3, first=0, second=1, label=2),
    "pawsx": Layout(columns=4, first=1, second=2, label=3),
    "single": Layout(columns=2, first=0, second=None, label=1),
}
_HEADER_LABELS = ("label", "gold_label")


@dataclass(frozen=True)
class Example:
    first: str
    second: Optional[str]
    label: str


def read_tsv(path: str, layout: str) -> List[Example]:
    """The examples of ``path`` in ``layout``; a wrong column count is a
    :class:`VecoUserError` naming the file, the line and the layout."""
    spec = LAYOUTS[layout]
    examples = []
    with open(path, encoding="utf-8", newline="") as f:
        for lineno, row in enumerate(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE), 1):
            if len(row) != spec.columns:
                raise VecoUserError(
                    f"{path}:{lineno}: {len(row)} columns, the {layout} layout has "
                    f"{spec.columns}; pick --layout ({', '.join(LAYOUTS)})"
                )
            if lineno == 1 and row[spec.label].strip().lower() in _HEADER_LABELS:
                continue
            second = None if spec.second is None else row[spec.second].strip()
            examples.append(Example(row[spec.first].strip(), second, row[spec.label].strip()))
    if not examples:
        raise VecoUserError(f"{path}: no examples")
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


def label_dictionary(labels: Sequence[str]) -> Dictionary:
    d = Dictionary()
    for label in sorted(set(labels)):
        d.add_symbol(label)
    return d


def _binarize(lines: Sequence[str], dictionary: Dictionary, prefix: str) -> None:
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    builder = indexed_dataset.make_builder(prefix + ".bin", impl="mmap", vocab_size=len(dictionary))
    for line in lines:
        ids = dictionary.encode_line(line, add_if_not_exist=False, append_eos=True)
        builder.add_item(torch.IntTensor(ids))
    builder.finalize(prefix + ".idx")


def prepare(
    output: str,
    splits: Dict[str, Tuple[str, Optional[str]]],
    layout: str,
    spm_model: str,
    dictionary: str,
) -> Dict[str, Dict[str, int]]:
    """Binarize ``splits`` (name -> (TSV, translation TSV or None)) into ``output``;
    the label dictionary comes from the ``train`` split. Returns per split the example
    count and the label counts."""
    if "train" not in splits:
        raise VecoUserError("--split train=TSV is needed (the label dictionary comes from it)")
    tokens = Dictionary.load(dictionary)
    encode = spm_encoder(spm_model)
    read = {name: read_tsv(tsv, layout) for name, (tsv, _) in splits.items()}
    labels = label_dictionary([e.label for e in read["train"]])
    for key in ("input0", "input1", "trans0", "trans1"):
        os.makedirs(os.path.join(output, key), exist_ok=True)
        shutil.copyfile(dictionary, os.path.join(output, key, "dict.txt"))
    os.makedirs(os.path.join(output, "label"), exist_ok=True)
    labels.save(os.path.join(output, "label", "dict.txt"))
    report = {}
    for name, (tsv, translation) in splits.items():
        examples = read[name]
        unknown = sorted({e.label for e in examples} - set(labels.symbols))
        if unknown:
            raise VecoUserError(f"{tsv}: label {unknown[0]!r} does not occur in the train split")
        sides = [("input", examples)]
        if translation:
            translated = read_tsv(translation, layout)
            if len(translated) != len(examples):
                raise VecoUserError(
                    f"{translation}: {len(translated)} examples, {tsv} has {len(examples)}: "
                    "a translation TSV must be line-aligned with its split"
                )
            sides.append(("trans", translated))
        for key, rows in sides:
            _binarize(
                encode_lines(encode, [e.first for e in rows]), tokens, _at(output, key, 0, name)
            )
            if rows[0].second is not None:
                seconds = [e.second or "" for e in rows]
                _binarize(encode_lines(encode, seconds), tokens, _at(output, key, 1, name))
        _binarize([e.label for e in examples], labels, os.path.join(output, "label", name))
        report[name] = {"examples": len(examples)}
        for label in labels.symbols[labels.nspecial :]:
            report[name][f"label_{label}"] = sum(e.label == label for e in examples)
    return report


def _at(output: str, key: str, side: int, split: str) -> str:
    return os.path.join(output, f"{key}{side}", split)
