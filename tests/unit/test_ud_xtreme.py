"""UD CoNLL-U -> XTREME's udpos words, checked word for word against XTREME's own output.

The CoNLL-U files are byte-for-byte excerpts of UD treebanks at tag r2.7, the TSVs the
matching excerpts of salesforce/MPT ``data/udpos`` (XTREME's download, run while it took
UD 2.7 for every language): tests/fixtures/udpos/README.md."""

import os

import pytest

from veco_plugin.cli.prepare_udpos import cli_main
from veco_plugin.corpora.tagging import (
    conllu_rows,
    format_conllu_like,
    read_conllu,
    read_tagged,
    read_tagged_tsv,
)
from veco_plugin.corpora.ud_xtreme import (
    ConverterFailure,
    clean_word,
    conllu_language,
    unreadable,
    xtreme_words,
)
from veco_plugin.corpora.udpos_layout import format_udpos, split_of

FIX = "tests/fixtures/udpos"
FQB = f"{FIX}/fr_fqb-ud-test.r2.7.excerpt.conllu"
ANCORA = f"{FIX}/es_ancora-ud-test.r2.7.excerpt.conllu"
GSD_DEV = f"{FIX}/de_gsd-ud-dev.r2.7.excerpt.conllu"
PERDT = f"{FIX}/fa_perdt-ud-test.r2.7.excerpt.conllu"
ESL = f"{FIX}/en_esl-ud-test.r2.7.excerpt.conllu"
# (UD excerpt, XTREME's matching excerpt, how many of its sentences the excerpt holds)
PAIRS = [
    (FQB, f"{FIX}/test-fr.excerpt.tsv", 10),
    (f"{FIX}/fr_fqb-ud-test.r2.7.sentence-283.conllu", f"{FIX}/test-fr.sentence-283.tsv", 1),
    (ANCORA, f"{FIX}/test-es.excerpt.tsv", 10),
    (GSD_DEV, f"{FIX}/dev-de.excerpt.tsv", 20),
    (PERDT, f"{FIX}/test-fa.excerpt.tsv", 8),
]


def pairs(sentences):
    return [(s.words, s.tags) for s in sentences]


@pytest.mark.parametrize("conllu, tsv, n", PAIRS, ids=lambda p: os.path.basename(str(p)))
def test_conversion_equals_xtremes_output_word_for_word(conllu, tsv, n):
    ours = read_conllu(conllu)
    assert len(ours) == n
    assert pairs(ours) == pairs(read_tagged_tsv(tsv)[:n])


def test_multiword_tokens_are_one_word_tagged_by_the_converters_rules():
    french = read_conllu(FQB)
    assert ("au", "ADP") in zip(french[0].words, french[0].tags)  # à + le: tie, ADP first
    flat = [w for s in french for w in s.words]
    assert "au" in flat and "le" not in flat[:9]
    spanish = read_conllu(ANCORA)
    fused = [(w, t) for s in spanish for w, t in zip(s.words, s.tags)]
    assert ("mencionarlo", "VERB") in fused  # mencionar + lo: the verb is the single highest
    german = read_conllu(GSD_DEV)
    assert ("im", "ADP") in [(w, t) for s in german for w, t in zip(s.words, s.tags)]


def test_zwnj_and_spaces_inside_words_are_removed():
    persian = read_conllu(PERDT)
    published = [r[1] for _, rows in conllu_rows(PERDT) for r in rows]
    assert any("\u200c" in w for w in published)
    assert not any("\u200c" in w for s in persian for w in s.words)
    assert "موافقتنامه" in persian[0].words  # موافقت‌نامه as XTREME writes it
    spaced = read_conllu(f"{FIX}/fr_fqb-ud-test.r2.7.sentence-283.conllu")[0]
    assert "17451" in spaced.words  # "17 451" in the treebank
    assert clean_word(" a\u200cb c ") == "abc"


def test_sentences_of_underscores_are_dropped():
    """UD English-ESL is distributed without its text: every word reads ``_``."""
    assert len(list(conllu_rows(ESL))) == 3
    assert read_conllu(ESL) == []
    assert unreadable(["_", "x"]) and unreadable(["_"]) and not unreadable(["_", "x", "y"])
    assert not unreadable([])


def test_the_language_is_the_file_names_and_decides_ties():
    assert conllu_language("UD_French-FQB/fr_fqb-ud-test.conllu") == "fr"
    # "au": à (ADP) and le (DET) both attach to the noun; every list ranks ADP first
    sentence = next(rows for _, rows in conllu_rows(FQB))
    assert xtreme_words(sentence, "fr") == xtreme_words(sentence, "xx")
    # the default list ranks DET above CCONJ; French's lacks CCONJ: a tie on it stops
    # XTREME's converter (the file is left out)
    tie = [
        ["1-2", "ab", "_", "_", "_", "_", "_", "_", "_", "_"],
        ["1", "a", "a", "CCONJ", "_", "_", "3", "cc", "_", "_"],
        ["2", "b", "b", "DET", "_", "_", "3", "det", "_", "_"],
        ["3", "c", "c", "NOUN", "_", "_", "0", "root", "_", "_"],
    ]
    assert xtreme_words(tie, "xx") == (("ab", "c"), ("DET", "NOUN"))
    with pytest.raises(ConverterFailure, match="CCONJ is not in the converter's ranking"):
        xtreme_words(tie, "fr")


def test_predictions_go_on_every_word_of_a_multiword_token():
    sentences = read_conllu(FQB)
    tags = [[f"T{i}" for i in range(len(s.words))] for s in sentences]
    text = format_conllu_like(FQB, tags)
    assert len(text.splitlines()) == len(open(FQB, encoding="utf-8").read().splitlines())
    rows = [line.split("\t") for line in text.splitlines()[:20] if line[:1].isdigit()]
    au = [r for r in rows if r[1] in ("à", "le")][:2]
    assert au[0][3] == au[1][3]  # "au" = à + le: one prediction on both words


def test_splits_and_the_layouts_bytes():
    assert split_of("de_hdt-ud-train-a-1.conllu") == "train"
    assert split_of("en_ewt-ud-dev.conllu") == "dev" and split_of("x.conllu") is None
    sentences = read_conllu(ANCORA)
    with open(f"{FIX}/test-es.excerpt.tsv", encoding="utf-8") as f:
        published = f.read()
    assert format_udpos(sentences) + "\n" == published  # XTREME ends without a blank line


def run_cli(capsys, *args):
    """(exit status, stderr) of ``veco-prepare-udpos ARGS``, run in this process."""
    try:
        cli_main(list(args))
        status = 0
    except SystemExit as exc:
        status = int(exc.code or 0)
    return status, capsys.readouterr().err


def test_cli_builds_xtremes_layout_from_treebank_folders(tmp_path, capsys):
    ud = tmp_path / "ud"
    sentence_283 = f"{FIX}/fr_fqb-ud-test.r2.7.sentence-283.conllu"
    for folder, name, path in [  # the treebanks' own names: <lang>_<tb>-ud-<split>.conllu
        ("UD_French-X", "fr_x-ud-test.conllu", sentence_283),  # pooled after fr_fqb (names)
        ("UD_French-X", "fr_x-ud-notes.conllu", sentence_283),  # names no split: left out
        ("UD_French-FQB", "fr_fqb-ud-test.conllu", FQB),
        ("UD_Spanish-AnCora", "es_ancora-ud-test.conllu", ANCORA),
        ("UD_English-ESL", "en_esl-ud-test.conllu", ESL),  # every sentence dropped
        ("UD_German-GSD", "de_gsd-ud-dev.conllu", GSD_DEV),
    ]:
        (ud / folder).mkdir(parents=True, exist_ok=True)
        (ud / folder / name).write_bytes(open(path, "rb").read())
    out = tmp_path / "udpos"
    status, err = run_cli(
        capsys, "--ud", str(ud), "--output", str(out), "--languages", "fr,es,de,en"
    )
    assert status == 0, err
    assert sorted(os.listdir(out)) == ["dev-de.tsv", "test-es.tsv", "test-fr.tsv"]
    french = read_conllu(FQB) + read_conllu(sentence_283)
    assert pairs(read_tagged([str(out / "test-fr.tsv")])) == pairs(french)
    with open(out / "test-es.tsv", encoding="utf-8") as f, open(PAIRS[2][1], encoding="utf-8") as g:
        assert f.read() + "\n" == g.read()  # XTREME's bytes (its excerpt ends in a blank line)
    status, err = run_cli(capsys, "--ud", str(ud), "--output", str(out), "--languages", "fr")
    assert status == 1 and "not empty" in err


@pytest.mark.parametrize(
    "setup, languages, words",
    [
        ("missing", "fr", "no such folder"),
        ("empty", "fr", "no treebank (UD_*/fr_*.conllu) for fr"),
        ("bad", "fr", "tab-separated columns"),
        ("latin-1", "fr", "save the file as UTF-8"),
        ("ok", "fr,", "expected codes"),
    ],
)
def test_cli_bad_input_is_one_line(tmp_path, capsys, setup, languages, words):
    ud = tmp_path / "ud"
    if setup != "missing":
        (ud / "UD_French-X").mkdir(parents=True)
    if setup == "bad":
        (ud / "UD_French-X" / "fr_x-ud-test.conllu").write_text("1\tun\n\n", encoding="utf-8")
    if setup == "latin-1":
        row = "1\tété\tété\tNOUN\t_\t_\t0\troot\t_\t_\n\n"
        (ud / "UD_French-X" / "fr_x-ud-test.conllu").write_bytes(row.encode("latin-1"))
    status, err = run_cli(
        capsys, "--ud", str(ud), "--output", str(tmp_path / "out"), "--languages", languages
    )
    assert status == 1
    assert err.count("\n") == 1 and err.startswith("veco-prepare-udpos: error: ") and words in err
    assert not (tmp_path / "out").exists()
