"""PAN-X (XTREME's NER) as XTREME reads and scores it (tests/fixtures/panx/README.md).

* XTREME's mock submission (``mock_test_data/{labels,predictions}/panx``, tags only): read
  as ``evaluate.py`` reads it, scored equal to seqeval (PyPI) per language and to the
  averages XTREME's ``evaluate_test.py`` expects;
* a **hand-made** excerpt in PAN-X's published ``lang:word<TAB>tag`` layout (no labelled
  PAN-X file can be had here): the language prefix cut as XTREME's ``utils_preprocess.py``
  cuts it, then ``veco-prepare-tagging``'s label set (the train split's BIO tags);
* chunk counts of sentences apart sum to those of the joined file (what the validation F1
  of ``veco_tagging`` sums).
"""

import glob
import random

import pytest

from veco_plugin.corpora.subwords import train_sentencepiece, write_dictionary
from veco_plugin.corpora.tagging import read_tag_lines, read_tagged, read_tagged_tsv
from veco_plugin.corpora.tagging_data import prepare_tagging
from veco_plugin.errors import VecoUserError
from veco_plugin.evaluation.tagging_scores import ChunkCounts, chunk_counts, chunk_f1, chunks

FIX = "tests/fixtures/panx"
LABELS = sorted(glob.glob(f"{FIX}/mock/labels/test-*.tsv"))
HANDMADE = f"{FIX}/handmade"
BIO = ("B-LOC", "B-ORG", "B-PER", "I-LOC", "I-ORG", "I-PER", "O")
# google-research/xtreme @ 838c13b, evaluate_test.py TASK2AVG_SCORES["panx"]
XTREME_AVG = {
    "f1": 57.50793650793652,
    "precision": 54.729166666666664,
    "recall": 62.750000000000014,
}


def _mock(label_file):
    """(gold, predicted) sentences of one language's mock files."""
    predictions = label_file.replace("/labels/", "/predictions/")
    return read_tag_lines(label_file), read_tag_lines(predictions)


def test_mock_files_read_as_evaluate_py_reads_them():
    assert len(LABELS) == 40
    gold, predicted = _mock(f"{FIX}/mock/labels/test-en.tsv")
    assert [len(s) for s in gold] == [20, 14] and gold[1][:3] == ["O", "B-PER", "I-PER"]
    for label_file in LABELS:
        gold, predicted = _mock(label_file)
        assert [len(s) for s in gold] == [len(s) for s in predicted], label_file
        assert {t for s in gold + predicted for t in s} <= set(BIO)


def test_mock_scores_equal_seqeval_and_xtremes_expected_averages():
    seqeval = pytest.importorskip("seqeval.metrics")
    ours = {"f1": [], "precision": [], "recall": []}
    for label_file in LABELS:
        gold, predicted = _mock(label_file)
        counts = chunk_counts(gold, predicted)
        with pytest.warns() if not counts.predicted else _nothing():  # seqeval: 0/0 -> 0
            assert chunk_f1(gold, predicted) == seqeval.f1_score(gold, predicted), label_file
        ours["f1"].append(100 * chunk_f1(gold, predicted))
        ours["precision"].append(100 * counts.correct / counts.predicted if counts.predicted else 0)
        ours["recall"].append(100 * counts.correct / counts.gold)
    average = {key: sum(values) / len(values) for key, values in ours.items()}
    assert average["f1"] == XTREME_AVG["f1"]  # to the last bit
    assert average == pytest.approx(XTREME_AVG, abs=1e-12)


def test_sentences_counted_apart_sum_to_the_joined_counts_for_bio():
    """seqeval's ``O`` between sentences ends every BIO chunk: per-sentence counts (each
    validation window apart) sum to the counts over the whole file."""
    rng = random.Random(0)
    pairs = [_mock(f) for f in LABELS]
    for _ in range(50):
        gold = [[rng.choice(BIO) for _ in range(rng.randint(0, 9))] for _ in range(30)]
        pairs.append((gold, [[rng.choice(BIO) for _ in s] for s in gold]))
    for gold, predicted in pairs:
        apart = [chunk_counts([g], [p]) for g, p in zip(gold, predicted)]
        summed = ChunkCounts(*(sum(c[i] for c in apart) for i in range(3)))
        assert summed == chunk_counts(gold, predicted)
    # the one exception, a typeless tag (UPOS X): its chunk runs on into the next sentence
    assert ("_", 1, 3) in chunks([["NOUN", "X"], ["X", "NOUN"]])


def _xtreme_panx_words(path):
    """XTREME's ``utils_preprocess.py --task panx`` on one file, as its code reads: a line of
    two tab-separated fields keeps the text after the first colon of the first, stripped,
    and the second; any other line is a sentence end."""
    sentences, words = [], []
    for line in open(path, encoding="utf-8").read().split("\n"):
        fields = line.strip().split("\t")
        if len(fields) == 2 and ":" in fields[0]:
            words.append((fields[0][fields[0].index(":") + 1 :].strip(), fields[1].strip()))
        elif len(fields) != 2 and words:
            sentences.append(words)
            words = []
    return sentences + ([words] if words else [])


@pytest.mark.parametrize("name", ["en-train", "en-dev", "de-test"])
def test_handmade_panx_words_lose_the_language_prefix_as_in_xtreme(name):
    path = f"{HANDMADE}/{name}"
    read = read_tagged_tsv(path)
    assert [list(zip(s.words, s.tags)) for s in read] == _xtreme_panx_words(path)
    words = [w for s in read for w in s.words]
    assert not any(w.startswith(("en:", "de:")) for w in words)
    assert {"12:30", ":", "http://example.org", "9:15"} & set(words)


def test_a_processed_file_keeps_colons_and_a_raw_file_needs_every_prefix(tmp_path):
    processed = tmp_path / "dev-en.tsv"
    processed.write_text("12:30\tO\nen:x\tO\n\nRome\tB-LOC\n", encoding="utf-8")
    assert [s.words for s in read_tagged_tsv(str(processed))] == [("12:30", "en:x"), ("Rome",)]
    mixed = tmp_path / "en-dev"
    mixed.write_text("en:Rome\tB-LOC\nde:Köln\tB-LOC\n", encoding="utf-8")
    with pytest.raises(VecoUserError, match=f"^{mixed}:2: 'de:Köln' is not en:WORD as the file"):
        read_tagged_tsv(str(mixed))
    empty = tmp_path / "en-test"
    empty.write_text("en:Rome\tB-LOC\nen: \tO\n", encoding="utf-8")
    with pytest.raises(VecoUserError, match=f"^{empty}:2: 'en: ' is not en:WORD"):
        read_tagged_tsv(str(empty))


def test_unlabelled_panx_and_word_files_as_tag_lines_are_one_line(tmp_path):
    unlabelled = tmp_path / "test-de.tsv"  # XTREME's processed test file: words, no tags
    unlabelled.write_text("Angela\nMerkel\n", encoding="utf-8")
    with pytest.raises(VecoUserError, match="no tag: an unlabelled file .*AmazonPhotos.zip"):
        read_tagged([str(unlabelled)])
    with pytest.raises(VecoUserError, match=r":1: 'en:Marie\\tB-PER' is not one tag"):
        read_tag_lines(f"{HANDMADE}/en-train")


def test_prepare_tagging_takes_the_bio_labels_of_the_train_split(tmp_path):
    text = tmp_path / "words.txt"
    sentences = read_tagged([f"{HANDMADE}/{n}" for n in ("en-train", "en-dev", "de-test")])
    text.write_text("\n".join(" ".join(s.words) for s in sentences) + "\n", encoding="utf-8")
    model = train_sentencepiece([str(text)], str(tmp_path / "spm"), 120, hard_vocab_limit=False)
    write_dictionary(model, str(tmp_path / "dict.txt"))
    splits = {"train": [f"{HANDMADE}/en-train"], "valid": [f"{HANDMADE}/en-dev"]}
    splits["test_de"] = [f"{HANDMADE}/de-test"]
    report = prepare_tagging(str(tmp_path / "data"), splits, model, str(tmp_path / "dict.txt"))
    labels = (tmp_path / "data" / "label" / "dict.txt").read_text(encoding="utf-8").split("\n")
    assert [line.split(" ")[0] for line in labels if line] == list(BIO)
    assert report["train"] == {"sentences": 6, "words": 41, "windows": 6, "unknown_tag_words": 0}
    assert report["test_de"]["words"] == 17 and report["test_de"]["unknown_tag_words"] == 0


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
