"""veco_plugin.checkpoints.classifier: a fine-tuned XLM-R classifier in Hugging Face's layout
(``XLMRobertaForSequenceClassification``, as VECO's NLU model is released; built here with
random weights) -> ``veco-import-hf`` -> read as a plug-out ``veco_sentence_prediction``
model on DATA from ``veco-prepare-sentence-prediction``: the same token ids as the HF
tokenizer and the same logits as the HF model; a model without a head, or with another
class count than DATA's labels, is one line; ``veco-sentence-eval`` scores it."""

import json

import pytest
import torch

from tests.helpers.hf_xlmr import hf_dir, xlmr_spm
from veco_plugin.checkpoints.classifier import load_classifier
from veco_plugin.cli.sentence_prediction_eval import accuracy, cli_main
from veco_plugin.corpora.xtreme import prepare
from veco_plugin.errors import VecoUserError
from veco_plugin.export.import_hf import import_model

transformers = pytest.importorskip("transformers")

TEXT = "tests/fixtures/text"


def _xnli(path, labels):
    en = open(f"{TEXT}/train.en", encoding="utf-8").read().splitlines()[:24]
    de = open(f"{TEXT}/train.de", encoding="utf-8").read().splitlines()[:24]
    rows = [(e, d, labels[i % len(labels)]) for i, (e, d) in enumerate(zip(en, de))]
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(f"{e}\t{d}\t{label}\n" for e, d, label in rows)
    return rows


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    root = tmp_path_factory.mktemp("classifier")
    spm = xlmr_spm(root)
    hf = hf_dir(
        root / "hf", "XLMRobertaForSequenceClassification", spm, max_position_embeddings=130
    )
    import_model(str(root / "hf"), str(root / "out"))
    rows = _xnli(root / "test.tsv", ["0", "1", "2"])
    out = root / "out"
    split = (str(root / "test.tsv"), None)
    prepare(
        str(root / "data"),
        {"train": split, "test_en": split},
        "xnli",
        str(out / "sentencepiece.bpe.model"),
        str(out / "dict.txt"),
    )
    return root, hf, rows


def test_an_imported_classifier_computes_what_transformers_computes(imported):
    root, hf, rows = imported
    model, cfg, task = load_classifier(str(root / "out" / "model.pt"), str(root / "data"))
    task.load_dataset("test_en")
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(root / "hf"))
    batch = task.dataset("test_en").collater([task.dataset("test_en")[i] for i in range(8)])
    tokens = batch["net_input"]["src_tokens"]
    real = tokens.ne(task.source_dictionary.pad())
    for row, ids, (first, second, _) in zip(tokens, real, rows):
        assert row[ids].tolist() == tokenizer(first, second)["input_ids"]
    with torch.no_grad():
        ours = model(
            **batch["net_input"],
            features_only=True,
            classification_head_name=cfg.task.classification_head_name,
        )[0]
        theirs = hf(input_ids=tokens, attention_mask=real.long()).logits
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=0)

    criterion = task.build_criterion(cfg.criterion)
    with torch.no_grad():
        each = [hf(**tokenizer(f, s, return_tensors="pt")).logits[0] for f, s, _ in rows]
    # ours runs in batches of 5, HF one row at a time: the logits agree to 1e-5 (above), so
    # the classes agree where the two best logits are further apart (measured: >= 0.029)
    assert min(float(row.topk(2).values.diff().abs()) for row in each) > 1e-4
    every = [int(row.argmax()) for row in each]
    labels = [
        task.label_dictionary.index(label) - task.label_dictionary.nspecial for *_, label in rows
    ]
    expected = 100.0 * sum(p == y for p, y in zip(every, labels)) / len(rows)
    assert accuracy(task, model, criterion, task.dataset("test_en"), 5) == pytest.approx(expected)

    # the command line reads it as it reads a fine-tuned veco_sentence_prediction checkpoint
    table = root / "table.json"
    cli_main(["--data", str(root / "data"), "--checkpoint", f"nlu={root}/out/model.pt",
              "--splits", "test_en", "--json", str(table)])  # fmt: skip
    assert json.loads(table.read_text()) == {"nlu": {"test_en": pytest.approx(expected)}}


def test_a_model_without_head_or_with_other_classes_is_one_line(imported, tmp_path):
    root, _, _ = imported
    spm = xlmr_spm(tmp_path)
    hf_dir(tmp_path / "mlm", "XLMRobertaForMaskedLM", spm)
    import_model(str(tmp_path / "mlm"), str(tmp_path / "mlm-out"))
    with pytest.raises(VecoUserError, match="no classification head.*fine-tune it first"):
        load_classifier(str(tmp_path / "mlm-out" / "model.pt"), str(root / "data"))

    split = (str(tmp_path / "two.tsv"), None)
    _xnli(tmp_path / "two.tsv", ["0", "1"])
    out = root / "out"
    prepare(
        str(tmp_path / "two"),
        {"train": split},
        "xnli",
        str(out / "sentencepiece.bpe.model"),
        str(out / "dict.txt"),
    )
    with pytest.raises(VecoUserError, match="has 3 classes.*label/dict.txt has 2"):
        load_classifier(str(out / "model.pt"), str(tmp_path / "two"))
