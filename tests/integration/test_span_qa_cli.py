"""Extractive QA from a checkpoint to the zero-shot table, through the real console
scripts: ``veco-prepare-span-qa`` on XQuAD as published (tests/fixtures/xquad: its first
two articles), ``fairseq-train --task veco_span_qa`` from the ``cold_start`` pre-training
checkpoint, and ``veco-qa-eval`` on English and German.

No leak: XQuAD's paragraphs are the same in every language, so the stand-in training set
is article 1 (Super_Bowl_50, English) and the test is article 2 (Warsaw) in en and de.
"""

import json

import pytest
import torch
from fairseq.data import data_utils

from tests.helpers.runner import USER_DIR, json_logs, run
from veco_plugin.checkpoints.trusted_load import load_trusted
from veco_plugin.corpora.span_qa_data import encode_windows, read_settings
from veco_plugin.corpora.squad import read_squad
from veco_plugin.corpora.subwords import load_sentencepiece
from veco_plugin.data.dictionary import load_dictionary
from veco_plugin.evaluation.qa_decode import best_answers

FIX = "tests/fixtures/xquad"
EPOCHS = 6
LANGS = ("en", "de")


def _article(lang: str, index: int, path) -> str:
    """XQuAD's article ``index`` in ``lang`` as a SQuAD file of its own."""
    with open(f"{FIX}/xquad.{lang}.json", encoding="utf-8") as f:
        published = json.load(f)
    path.write_text(
        json.dumps(
            {"version": published.get("version", "1.1"), "data": [published["data"][index]]}
        ),
        encoding="utf-8",
    )
    return str(path)


@pytest.fixture(scope="module")
def fine_tuned(pretrain_data, cold_start, tmp_path_factory):
    """DATA, the test files, the fine-tuned checkpoint dir and fairseq-train's output."""
    out = tmp_path_factory.mktemp("span_qa")
    positions = int(load_trusted(str(cold_start))["cfg"]["model"].max_positions)  # 96
    train = _article("en", 0, out / "train.en.json")
    tests = {lang: _article(lang, 1, out / f"test.{lang}.json") for lang in LANGS}
    data = out / "data"
    run(
        "veco-prepare-span-qa",
        ["--spm-model", f"{pretrain_data}/spm.model", "--dict", f"{pretrain_data}/dict.txt"]
        + ["--output", data, "--split", f"train={train}", "--split", f"valid={tests['en']}"]
        + ["--max-length", positions, "--max-question", positions // 4]
        + ["--doc-stride", positions // 2],
    )
    log = run(
        "fairseq-train",
        [data, "--user-dir", USER_DIR, "--task", "veco_span_qa", "--criterion", "veco_span_qa"]
        + ["--arch", "veco_tiny", "--max-positions", positions, "--restore-file", cold_start]
        + ["--reset-optimizer", "--reset-dataloader", "--reset-meters", "--reset-lr-scheduler"]
        + ["--optimizer", "adam", "--lr", "1e-3", "--lr-scheduler", "fixed", "--batch-size", 16]
        + ["--max-epoch", EPOCHS, "--dropout", "0.1", "--cpu", "--num-workers", "0"]
        + ["--save-interval", 1, "--save-dir", out / "ckpt", "--log-format", "json"]
        + ["--log-interval", "1", "--seed", "1"],
    ).stdout
    return data, tests, out / "ckpt", log


def test_training_loss_falls_and_english_is_not_worse_than_after_epoch_one(fine_tuned, tmp_path):
    data, tests, ckpt, log = fine_tuned
    epochs = json_logs(log, "train")
    assert len(epochs) == EPOCHS and epochs[-1]["loss"] < 0.5 * epochs[0]["loss"], log[-3000:]
    scores = tmp_path / "scores.json"
    out = run(
        "veco-qa-eval",
        ["--data", data, "--checkpoint", f"first={ckpt}/checkpoint1.pt"]
        + ["--checkpoint", f"last={ckpt}/checkpoint_last.pt"]
        + [arg for lang in LANGS for arg in ("--test", f"{lang}={tests[lang]}")]
        + ["--json", scores, "--predictions", tmp_path / "pred"],
    ).stdout
    result = json.loads(scores.read_text())
    for name in ("first", "last"):
        for metric in ("em", "f1"):
            assert set(result[name][metric]) == {*LANGS, "avg"}, out
            assert all(0 <= v <= 100 for v in result[name][metric].values()), out
        for lang in LANGS:
            predicted = json.loads(
                (tmp_path / "pred" / name / f"predictions.{lang}.json").read_text()
            )
            assert set(predicted) == {e.id for e in read_squad(tests[lang])}
    # measured here (seed 1, CPU): train loss 4.02 -> 0.93 bits over 6 epochs; F1 en/de
    # 0.0/0.0 after epoch 1, 4.0/5.0 after epoch 6, EM 0 throughout: a veco_tiny after 150
    # gettext updates, fine-tuned on 30 questions, learns where answers sit, hardly what
    # they are. A strict ">" would hinge on one question's partial match, so: not worse.
    assert result["last"]["f1"]["en"] >= result["first"]["f1"]["en"], out
    assert "normalisation: MLQA's for en, de" in out  # en too, as XTREME's evaluate.py
    assert result["last"]["normalisation"] == {"en": "mlqa-en", "de": "mlqa-de"}


def test_the_binarized_targets_decode_to_the_train_answers(fine_tuned):
    """input0 and targets are the windows evaluation makes again from the JSON; one-hot
    logits at each window's gold (start, end) give back the gold answer of most questions
    (those whose answer lies on piece boundaries in a window that holds it whole)."""
    data, _, _, _ = fine_tuned
    tokens = data_utils.load_indexed_dataset(str(data / "input0" / "train"), None)
    targets = data_utils.load_indexed_dataset(str(data / "targets" / "train"), None)
    sp = load_sentencepiece(str(data / "spm.model"))
    dictionary = load_dictionary(str(data / "input0" / "dict.txt"))
    examples = read_squad(str(data.parent / "train.en.json"))
    windows = encode_windows(sp, dictionary, examples, read_settings(str(data)))
    assert [tokens[i].tolist() for i in range(len(tokens))] == [list(w.tokens) for w in windows]
    assert [targets[i].tolist() for i in range(len(targets))] == [
        [w.start_position, w.end_position] for w in windows
    ]
    one_hot = [
        [torch.eye(len(w.tokens))[p] for p in (w.start_position, w.end_position)] for w in windows
    ]
    predicted = best_answers(
        {e.id: e.context for e in examples},
        windows,
        [s for s, _ in one_hot],
        [e for _, e in one_hot],
    )
    gold = {e.id: e.answers[0].text for e in examples}
    assert sum(predicted[q] == gold[q] for q in gold) >= 0.8 * len(gold), (predicted, gold)
