"""XTREME TSV layouts -> fairseq sentence_prediction DATA, read back with fairseq."""

import os

import pytest
from fairseq.data import Dictionary, data_utils

from veco_plugin.corpora.subwords import load_sentencepiece, train_sentencepiece, write_dictionary
from veco_plugin.corpora.xtreme import Example, prepare, read_tsv, unquote, write_tsv
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
    path = _write(tmp_path / "bad.tsv", [(*row, "x", "y") for row in XNLI])
    with pytest.raises(
        VecoUserError, match=r"bad.tsv:1: 5 tab-separated columns, the pawsx layout has 4 or 3"
    ):
        read_tsv(path, "pawsx")
    mixed = _write(tmp_path / "mixed.tsv", [XNLI[0], (*XNLI[1], "x")])
    with pytest.raises(
        VecoUserError,
        match=r"mixed.tsv:2: 4 tab-separated columns, the pawsx layout has 3 in this file",
    ):
        read_tsv(mixed, "pawsx")


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


PAIRS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "sentence-pairs")
BRIDGE_EN = (
    'The bridge, called "Old Stone", was built in 1820.',
    'Built in 1820, the bridge was called "Old Stone".',
)
MOCK = os.path.join(os.path.dirname(PAIRS), "xtreme_mock", "labels")


def pairs(*parts):
    return os.path.join(PAIRS, *parts)


def test_xtreme_processed_pawsx_is_read_and_its_csv_quoting_undone():
    """XTREME's pawsx/train-en.tsv (3 columns, no header, csv-quoted, CRLF) was refused
    under --layout pawsx; it reads as the release it was made from, quotes and all."""
    processed = read_tsv(pairs("xtreme", "pawsx", "train-en.tsv"), "pawsx")
    released = read_tsv(pairs("x-final", "en", "train.tsv"), "pawsx")
    assert processed == released and (processed[0].first, processed[0].second) == BRIDGE_EN
    assert [e.label for e in processed] == ["1", "0", "1"]


def test_xtreme_processed_xnli_is_unquoted_and_labels_spelt_as_xtreme():
    """XTREME's xnli/train-en.tsv was read with its csv quotes kept (``"The sign said ""
    closed "" all week ."``); XNLI-MT's own file spells the label ``contradictory``."""
    processed = read_tsv(pairs("xtreme", "xnli", "train-en.tsv"), "xnli")
    mt = pairs("XNLI-MT-1.0", "multinli", "multinli.train.en.tsv")
    assert processed == read_tsv(mt, "xnli")
    assert processed[1] == Example(
        'The sign said " closed " all week .', "The shop was open all week .", "contradiction"
    )


def test_unquote_undoes_only_what_the_csv_writer_wrote():
    assert unquote('"say ""hi"" now"') == 'say "hi" now'
    assert unquote('"quoted"') == '"quoted"'  # the writer leaves a quote-free text bare
    assert unquote('"a "b" c"') == '"a "b" c"'  # a lone inner quote: not the writer's
    assert unquote('"') == '"' and unquote("") == ""


def test_xnli_1_0_test_file_by_column_name_and_language():
    path = pairs("XNLI-1.0", "xnli.test.tsv")
    de = read_tsv(path, "xnli", "de")
    assert de == [
        Example("Der Zug fährt um acht Uhr ab.", "Der Zug fährt morgens.", "entailment"),
        Example('Sie sagte „Nein" und ging.', "Sie stimmte sofort zu.", "contradiction"),
    ]
    # XTREME's processed dev-en.tsv, made from this file, holds the same English rows
    assert read_tsv(path, "xnli", "en") == read_tsv(pairs("xtreme", "xnli", "dev-en.tsv"), "xnli")
    with pytest.raises(VecoUserError, match=r"holds 3 languages \(de, en, fr\): pick one") as e:
        read_tsv(path, "xnli")
    assert "\n" not in str(e.value)
    with pytest.raises(VecoUserError, match=r"no example in sw \(its languages: de, en, fr\)"):
        read_tsv(path, "xnli", "sw")


@pytest.mark.parametrize(
    "task, layout", [("pawsx", "pawsx"), ("xnli", "xnli")], ids=["pawsx", "xnli"]
)
def test_xtreme_unlabelled_test_file_is_refused_naming_labelled_copies(task, layout):
    path = pairs("xtreme", task, "test-de.tsv")
    with pytest.raises(VecoUserError, match="test-de.tsv:1: 2 columns .* and no label") as e:
        read_tsv(path, layout)
    message = str(e.value)
    assert "\n" not in message and "x-final/<lang>/test_2k.tsv" in message
    assert "XNLI-1.0/xnli.test.tsv" in message


def test_labels_as_xtreme_mock_files_show_them():
    """The labels read are the ones XTREME scores (its mock label files): PAWS-X 0/1, XNLI
    contradiction/entailment/neutral."""
    for task, layout, path in (
        ("pawsx", "pawsx", pairs("x-final", "de", "test_2k.tsv")),
        ("xnli", "xnli", pairs("XNLI-1.0", "xnli.test.tsv")),
    ):
        with open(os.path.join(MOCK, task, "test-de.tsv"), encoding="utf-8") as f:
            scored = {line.strip() for line in f}
        assert {e.label for e in read_tsv(path, layout, "de")} <= scored


def test_prepare_picks_each_split_s_language(tmp_path, spm):
    model, dict_txt = spm
    train = pairs("xtreme", "xnli", "train-en.tsv")
    test = pairs("XNLI-1.0", "xnli.test.tsv")
    splits = {"train": (train, None), "test_de": (test, None), "test_fr": (test, None)}
    languages = {"train": "en", "test_de": "de", "test_fr": "fr"}
    report = prepare(str(tmp_path / "d"), splits, "xnli", model, dict_txt, languages)
    assert report["test_de"] == {
        "examples": 2,
        "label_contradiction": 1,
        "label_entailment": 1,
        "label_neutral": 0,
    }
    assert report["test_fr"]["label_neutral"] == 1
    with pytest.raises(VecoUserError, match="--language test_es=es: no --split test_es="):
        prepare(str(tmp_path / "e"), splits, "xnli", model, dict_txt, {"test_es": "es"})


def test_language_flag_values():
    from veco_plugin.cli.prepare_sentence_prediction import parse_languages

    assert parse_languages(["test_de=de", "valid=en"]) == {"test_de": "de", "valid": "en"}
    with pytest.raises(VecoUserError, match="--language test_de: expected NAME=LANG"):
        parse_languages(["test_de"])
    with pytest.raises(VecoUserError, match="--language valid= is given twice"):
        parse_languages(["valid=en", "valid=de"])
