"""veco_span_qa's criterion and evaluation path: the loss is XTREME's masked start/end
cross-entropy, ``(CE(start) + CE(end)) / 2`` per window, by hand; and with the head's
logits replaced by one-hot logits at the gold (start, end), DATA written by
``prepare_span_qa`` and windowed again by ``answer_questions`` gives back every gold
answer that lies on piece boundaries (XQuAD English, several windows per question)."""

import json
import os
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from fairseq.data import Dictionary, data_utils

from tests.helpers.toy import build, random_tokens, toy_dictionary
from veco_plugin.corpora.span_qa_data import (
    encode_windows,
    prepare_span_qa,
    read_settings,
)
from veco_plugin.corpora.squad import read_squad
from veco_plugin.corpora.subwords import load_sentencepiece, train_sentencepiece, write_dictionary
from veco_plugin.criterions.veco_span_qa import VecoSpanQaCriterion, VecoSpanQaCriterionConfig
from veco_plugin.data.qa_windows import QaWindowSettings
from veco_plugin.errors import VecoUserError
from veco_plugin.evaluation.span_qa import answer_questions
from veco_plugin.models.veco_token_tagger import VecoTokenTagger

HEAD = "span_qa"
XQUAD_EN = os.path.join(
    os.path.dirname(os.path.dirname(__file__)), "fixtures", "xquad", "xquad.en.json"
)
SETTINGS = QaWindowSettings(max_length=96, max_question=24, doc_stride=48)


def test_loss_is_the_masked_start_and_end_cross_entropy():
    d = toy_dictionary()
    base = build("veco_tiny", d, seed=1, pooler_dropout=0.0)
    model = VecoTokenTagger(base.args, base.encoder)
    model.register_classification_head(HEAD, num_classes=2)
    model.eval()
    criterion = VecoSpanQaCriterion(
        VecoSpanQaCriterionConfig(classification_head_name=HEAD),
        SimpleNamespace(source_dictionary=d),
    )
    tokens = random_tokens(d, 4, 9, pad_tail=3)  # rows 1, 3: 6 tokens, 3 pads
    target = torch.tensor([[3, 5], [0, 0], [7, 8], [2, 4]])
    sample = {
        "net_input": {"src_tokens": tokens, "src_lengths": tokens.ne(d.pad()).sum(1)},
        "target": target,
        "ntokens": int(tokens.ne(d.pad()).sum()),
        "nsentences": 4,
    }
    with torch.no_grad():
        loss, size, log = criterion(model, sample)
        logits, _ = model(tokens, features_only=True, classification_head_name=HEAD)
    want = 0.0
    for row in range(4):
        real = tokens[row].ne(d.pad())
        start = -F.log_softmax(logits[row, real, 0], -1)[target[row, 0]]
        end = -F.log_softmax(logits[row, real, 1], -1)[target[row, 1]]
        want = want + (start + end) / 2
    torch.testing.assert_close(loss, want)
    assert size == 4 and log["sample_size"] == 4
    torch.testing.assert_close(log["start_loss"] + log["end_loss"], 2 * loss)


class GoldLogits(torch.nn.Module):
    """Stands in for the model: logits 10 at each window's gold start and end, 0
    elsewhere (B, T, 2); windows are recognised by their tokens."""

    def __init__(self, windows):
        super().__init__()
        self.gold = {w.tokens: (w.start_position, w.end_position) for w in windows}
        self.unused = torch.nn.Parameter(torch.zeros(1))

    def forward(self, src_tokens, features_only=True, classification_head_name=None):
        assert features_only and classification_head_name == HEAD
        logits = torch.zeros(*src_tokens.shape, 2)
        for row, ids in enumerate(src_tokens.tolist()):
            while ids and ids[-1] == 1:  # <pad>
                ids.pop()
            start, end = self.gold[tuple(ids)]
            logits[row, start, 0] = logits[row, end, 1] = 10.0
        return logits, {}


@pytest.fixture(scope="module")
def span_data(tmp_path_factory):
    """DATA of XQuAD English (train = the whole file), its sentencepiece model trained on it."""
    tmp = tmp_path_factory.mktemp("span_qa")
    examples = read_squad(XQUAD_EN)
    text = tmp / "text.txt"
    lines = sorted({t for e in examples for t in (e.question, e.context)})
    text.write_text("\n".join(lines) + "\n", encoding="utf-8")
    model = train_sentencepiece([str(text)], str(tmp / "spm"), 800, hard_vocab_limit=False)
    write_dictionary(model, str(tmp / "dict.txt"))
    prepare_span_qa(str(tmp / "data"), {"train": XQUAD_EN}, model, str(tmp / "dict.txt"), SETTINGS)
    return tmp / "data", examples


def _reachable(examples, windows):
    """Ids whose first answer is exactly the text between its first and last piece, in a
    window that gives the first piece its most context (XTREME's decoder takes a start
    only there; a window that cuts the answer is trained as "no answer", so a long answer
    near a window edge cannot be given back by gold targets alone)."""
    ids = set()
    for w in windows:
        if w.start_position:
            i, j = w.start_position - w.context_offset, w.end_position - w.context_offset
            context = next(e.context for e in examples if e.id == w.example_id)
            answer = next(e.answers[0].text for e in examples if e.id == w.example_id)
            on_boundaries = context[w.spans[i][0] : w.spans[j][1]].strip() == answer
            if on_boundaries and j - i < 30 and w.max_context[i]:
                ids.add(w.example_id)
    return ids


def test_gold_logits_give_back_every_gold_answer_on_piece_boundaries(span_data):
    data, examples = span_data
    tokens = Dictionary.load(str(data / "input0" / "dict.txt"))
    sp = load_sentencepiece(str(data / "spm.model"))
    windows = encode_windows(sp, tokens, examples, read_settings(str(data)))
    assert len(windows) > 2 * len(examples)  # several windows per question
    task = SimpleNamespace(cfg=SimpleNamespace(data=str(data)), source_dictionary=tokens)
    predicted = answer_questions(GoldLogits(windows), task, HEAD, examples, batch_size=7)
    assert set(predicted) == {e.id for e in examples}
    exact = _reachable(examples, windows)
    assert len(exact) > 0.8 * len(examples)
    wrong = {
        q: predicted[q]
        for q in exact
        if predicted[q] != next(e for e in examples if e.id == q).answers[0].text
    }
    assert not wrong


def test_the_binarized_rows_are_the_windows_evaluation_makes_again(span_data):
    """input0 and targets hold, row for row, the windows veco-qa-eval makes again from the
    JSON (tokens, gold start and end)."""
    data, examples = span_data
    tokens = Dictionary.load(str(data / "input0" / "dict.txt"))
    sp = load_sentencepiece(str(data / "spm.model"))
    windows = encode_windows(sp, tokens, examples, read_settings(str(data)))
    rows = data_utils.load_indexed_dataset(str(data / "input0" / "train"), None)
    targets = data_utils.load_indexed_dataset(str(data / "targets" / "train"), None)
    assert len(rows) == len(targets) == len(windows)
    for i, w in enumerate(windows):
        assert rows[i].tolist() == list(w.tokens)
        assert targets[i].tolist() == [w.start_position, w.end_position]


def test_a_data_directory_is_never_written_among_other_files(span_data):
    """Both prepare commands refuse a non-empty --output (was: span-QA and tagging DATA
    mixed in one directory, or splits beside unrelated files)."""
    from veco_plugin.corpora.tagging_data import prepare_tagging

    data, _ = span_data
    spm_model, dictionary = str(data / "spm.model"), str(data / "input0" / "dict.txt")
    before = sorted(p.name for p in data.iterdir())
    with pytest.raises(VecoUserError, match=f"--output {data} is not empty: give a new"):
        prepare_span_qa(str(data), {"train": XQUAD_EN}, spm_model, dictionary, SETTINGS)
    tagged = "tests/fixtures/udpos/dev-en.excerpt.tsv"
    with pytest.raises(VecoUserError, match=f"--output {data} is not empty: give a new"):
        prepare_tagging(str(data), {"train": [tagged]}, spm_model, dictionary)
    assert sorted(p.name for p in data.iterdir()) == before


def test_a_train_file_with_repeated_ids_is_counted_per_question(span_data, tmp_path):
    """XTREME's TyDiQA-GoldP English train file repeats ids (utils_preprocess.py keeps their
    last ``-`` part): it is prepared, and counted question by question."""
    data, examples = span_data
    with open(XQUAD_EN, encoding="utf-8") as f:
        published = json.load(f)
    for article in published["data"]:
        del article["title"]
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                qa["id"] = "0"
    train = tmp_path / "tydiqa.goldp.en.train.json"
    train.write_text(json.dumps(published), encoding="utf-8")
    spm_model, dictionary = str(data / "spm.model"), str(data / "input0" / "dict.txt")
    report = prepare_span_qa(str(tmp_path / "d"), {"train": str(train)}, spm_model, dictionary)
    expected = prepare_span_qa(str(tmp_path / "e"), {"train": XQUAD_EN}, spm_model, dictionary)
    assert report == expected and report["train"]["questions"] == len(examples)
