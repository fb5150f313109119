"""Tagged files as published -> windows -> veco_tagging DATA, and the scores.

Readers on real files (tests/fixtures/udpos/README.md: UD English EWT and German GSD
CoNLL-U, XTREME's labelled udpos TSVs from salesforce/MPT), XTREME's windowing
conventions, and the scorer against seqeval (PyPI)."""

import random

import pytest
import sentencepiece as spm

from veco_plugin.corpora.tagging import (
    TaggedSentence,
    format_conllu_like,
    read_conllu,
    read_tagged,
    read_tagged_tsv,
)
from veco_plugin.data.tag_windows import UNK_PIECE, windows, word_pieces
from veco_plugin.errors import VecoUserError
from veco_plugin.evaluation.tagging_scores import accuracy, chunk_f1, chunks

FIX = "tests/fixtures/udpos"
EWT = f"{FIX}/en_ewt-ud-dev.excerpt.conllu"
GSD = f"{FIX}/de_gsd-ud-test.excerpt.conllu"
UPOS = {"ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON"}
UPOS |= {"PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X"}


def test_conllu_fuses_ranges_skips_empty_nodes_and_reads_upos():
    """Multiword tokens are one word, as XTREME's udpos download makes them (issue 37;
    the reader used to keep the split words): tests/unit/test_ud_xtreme.py checks the
    conversion against XTREME's own files."""
    sentences = read_conllu(EWT)
    assert len(sentences) == 59
    pairs = [(w, t) for s in sentences for w, t in zip(s.words, s.tags)]
    assert ("didn't", "AUX") in pairs and ("n't", "PART") not in pairs  # range 29-30
    assert {t for s in sentences for t in s.tags} <= UPOS
    # the empty node 8.1 (a copy of "write") is no word: its sentence keeps its 33 words
    assert [len(s.words) for s in sentences][-1] == 33
    german = read_conllu(GSD)
    assert german[0].words[:3] == ("Der", "Hauptgang", "war") and len(german) == 120
    flat = [w for s in german for w in s.words]
    assert "im" in flat and flat.count("dem") == 8  # "im" = "in dem": one word


def test_treebanks_pool_and_tsv_reads_xtremes_layout():
    both = read_tagged([EWT, GSD])
    assert len(both) == 59 + 120 and both[59].where.startswith(GSD)
    tsv = read_tagged_tsv(f"{FIX}/train-en.excerpt.tsv")
    assert len(tsv) == 1000 and tsv[0].words[:3] == ("Al", "-", "Zaman")
    assert {t for s in tsv for t in s.tags} <= UPOS


def test_predictions_keep_the_conllu_as_published(tmp_path):
    sentences = read_conllu(GSD)
    tags = [["X"] * len(s.words) for s in sentences]
    text = format_conllu_like(GSD, tags)
    original = open(GSD, encoding="utf-8").read()
    assert len(text.splitlines()) == len(original.splitlines())
    out = tmp_path / "p.conllu"
    out.write_text(text, encoding="utf-8")
    again = read_conllu(str(out))
    assert [s.words for s in again] == [s.words for s in sentences]
    assert {t for s in again for t in s.tags} == {"X"}


@pytest.mark.parametrize(
    "text, words",
    [
        ("the\tDET\ncat\n\n", "word 'cat' has no tag: an unlabelled file"),
        ("the\tDET\tx\n\n", "3 tab-separated columns"),
        ("1\tthe\tthe\tDET\n\n", "4 tab-separated columns, CoNLL-U has 10"),
        ("1\tthe\tthe\t_\t_\t_\t0\troot\t_\t_\n\n", "has no UPOS tag"),
    ],
)
def test_bad_files_are_one_line_naming_file_and_line(tmp_path, text, words):
    suffix = ".conllu" if text.startswith("1\t") else ".tsv"
    path = tmp_path / f"f{suffix}"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(VecoUserError, match=words) as raised:
        read_tagged([str(path)])
    assert str(raised.value).startswith(f"{path}:")


@pytest.fixture(scope="module")
def sp(tmp_path_factory):
    text = tmp_path_factory.mktemp("spm") / "text.txt"
    sentences = read_tagged([f"{FIX}/train-en.excerpt.tsv", GSD])
    text.write_text("\n".join(" ".join(s.words) for s in sentences), encoding="utf-8")
    prefix = str(text.parent / "m")
    spm.SentencePieceTrainer.train(
        input=str(text), model_prefix=prefix, vocab_size=800, minloglevel=2
    )
    return spm.SentencePieceProcessor(model_file=prefix + ".model")


def test_windows_cut_between_words_and_tag_first_pieces(sp):
    sentences = read_tagged([GSD])
    pieces = word_pieces(lambda ws: sp.encode(ws, out_type=str), sentences)
    for limit in (6, 12, 126):
        wins = windows(sentences, pieces, limit)
        per_sentence = {}
        for w in wins:
            assert len(w.pieces) <= limit and len(w.pieces) == len(w.tags)
            assert [w.tags[i] for i in w.starts] == list(
                sentences[w.sentence].tags[w.first_word : w.first_word + len(w.starts)]
            )
            assert sum(t is not None for t in w.tags) == len(w.starts)
            per_sentence.setdefault(w.sentence, []).append(w)
        for number, sentence in enumerate(sentences):  # every word in exactly one window
            got = [
                i
                for w in per_sentence[number]
                for i in range(w.first_word, w.first_word + len(w.starts))
            ]
            assert got == list(range(len(sentence.words)))
    assert max(len(windows([s], [p], 6)) for s, p in zip(sentences, pieces)) > 1


def test_a_word_sentencepiece_drops_is_still_tagged():
    sentence = TaggedSentence(("a", "\u200b", "b"), ("X", "Y", "Z"), "f:1")
    [pieces] = word_pieces(lambda ws: [[w] if w.strip("\u200b") else [] for w in ws], [sentence])
    assert pieces == [["a"], [UNK_PIECE], ["b"]]
    [window] = windows([sentence], [pieces], 10)
    assert window.tags == ("X", "Y", "Z")


def test_scores_equal_seqeval_on_real_tags_with_errors():
    """XTREME's POS F1 is seqeval's f1_score: equal on the real GSD and EWT tags with
    random errors (and on BIO tags)."""
    seqeval = pytest.importorskip("seqeval.metrics")
    rng = random.Random(0)
    gold = [list(s.tags) for s in read_tagged([GSD, EWT])]
    tags = sorted({t for s in gold for t in s})
    for rate in (0.0, 0.1, 0.5):
        pred = [[t if rng.random() >= rate else rng.choice(tags) for t in s] for s in gold]
        with pytest.warns() if rate else _nothing():
            want = seqeval.f1_score(gold, pred)
        assert chunk_f1(gold, pred) == pytest.approx(want, abs=1e-12)
        assert accuracy(gold, pred) == pytest.approx(
            sum(g == p for gs, ps in zip(gold, pred) for g, p in zip(gs, ps)) / sum(map(len, gold))
        )
    bio = [["B-PER", "I-PER", "O", "B-LOC"], ["O", "B-ORG", "I-ORG", "I-ORG"]]
    assert chunks(bio) == {("PER", 0, 1), ("LOC", 3, 3), ("ORG", 6, 8)}


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
