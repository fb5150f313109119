"""XTREME TSV layouts -> fairseq sentence_prediction DATA, read back with fairseq."""

import os

import pytest
from fairseq.data import Dictionary, data_utils

from veco_plugin.corpora.subwords import load_sentencepiece, train_sentencepiece, write_dictionary
from veco_plugin.corpora.xtreme import Example, prepare, read_tsv, write_tsv
from veco_plugin.errors import VecoUserError

XNLI = [
    ("A man is playing a guitar.", "A person plays music.", "entailment"),
    ("A dog runs in the park.", "The cat sleeps.", "contradiction"),
    ("Children are reading books.", "Kids read at school.", "neutral"),
]


def _write(path, rows, header=None):
    with open(path, "w", encoding="utf-8") as f:
        if header:
            f.write("\t".join(header) + "\n")
        for row in rows:
            f.write("\t".join(row) + "\n")
    return str(path)


def test_layouts_and_header(tmp_path):
    xnli = read_tsv(_write(tmp_path / "x.tsv", XNLI, ("premise", "hypo", "label")), "xnli")
    assert xnli[0] == Example("A man is playing a guitar.", "A person plays music.", "entailment")
    assert len(xnli) == 3
    paws = [(str(i), a, b, "1") for i, (a, b, _) in enumerate(XNLI)]
    read = read_tsv(
        _write(tmp_path / "p.tsv", paws, ("id", "sentence1", "sentence2", "label")), "pawsx"
    )
    assert [e.first for e in read] == [a for a, _, _ in XNLI] and read[2].label == "1"
    write_tsv(str(tmp_path / "w.tsv"), read)
    assert read_tsv(str(tmp_path / "w.tsv"), "pawsx") == read


def test_wrong_column_count_names_file_and_line(tmp_path):
    path = _write(tmp_path / "bad.tsv", XNLI)
    with pytest.raises(
        VecoUserError, match=r"bad.tsv:1: 3 tab-separated columns, the pawsx layout has 4"
    ):
        read_tsv(path, "pawsx")


@pytest.fixture(scope="module")
def spm(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("spm")
    text = tmp / "text.txt"
    words = " ".join(a + " " + b for a, b, _ in XNLI)
    text.write_text("\n".join([words] * 20 + [w for w in words.split()]) + "\n")
    model = train_sentencepiece([str(text)], str(tmp / "spm"), 45)
    write_dictionary(model, str(tmp / "dict.txt"))
    return model, str(tmp / "dict.txt")


def test_prepare_binarizes_inputs_labels_and_translations(tmp_path, spm):
    model, dict_txt = spm
    train = _write(tmp_path / "train.tsv", XNLI)
    trans = _write(tmp_path / "train.de.tsv", [(b, a, c) for a, b, c in XNLI])
    test = _write(tmp_path / "test.tsv", XNLI[:2])
    out = str(tmp_path / "data")
    report = prepare(out, {"train": (train, trans), "test": (test, None)}, "xnli", model, dict_txt)
    assert report["train"]["examples"] == 3 and report["test"]["label_contradiction"] == 1
    tokens, sp = Dictionary.load(dict_txt), load_sentencepiece(model)
    labels = Dictionary.load(os.path.join(out, "label", "dict.txt"))
    assert labels.symbols[labels.nspecial :] == ["contradiction", "entailment", "neutral"]

    def read(key, split, d):
        return data_utils.load_indexed_dataset(os.path.join(out, key, split), d)

    for key, side in (("input0", 0), ("input1", 1), ("trans0", 1), ("trans1", 0)):
        ds = read(key, "train", tokens)
        for i, row in enumerate(XNLI):
            pieces = " ".join(sp.encode(row[side], out_type=str))
            assert tokens.string(ds[i]) == pieces
    assert [labels.string(t[:1]) for t in read("label", "test", labels)] == [
        "entailment",
        "contradiction",
    ]
    assert not os.path.exists(os.path.join(out, "trans0", "test.bin"))


def test_prepare_refuses_unaligned_translation_and_unknown_label(tmp_path, spm):
    model, dict_txt = spm
    train = _write(tmp_path / "train.tsv", XNLI)
    short = _write(tmp_path / "short.tsv", XNLI[:2])
    out = str(tmp_path / "data")
    with pytest.raises(VecoUserError, match="line-aligned"):
        prepare(out, {"train": (train, short)}, "xnli", model, dict_txt)
    odd = _write(tmp_path / "odd.tsv", [("a b", "c d", "maybe")])
    with pytest.raises(VecoUserError, match="label 'maybe' does not occur in the train split"):
        prepare(out, {"train": (train, None), "test": (odd, None)}, "xnli", model, dict_txt)
