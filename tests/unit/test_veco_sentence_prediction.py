"""veco_sentence_prediction: plug-out == fairseq RoBERTa's sentence prediction, the
plug-in head reads [H^L ; S^L], the fallback reads [H^L ; H^L] with a warning."""

import logging
from types import SimpleNamespace

import pytest
import torch
from fairseq.criterions.sentence_prediction import (
    SentencePredictionConfig,
    SentencePredictionCriterion,
)

from tests.helpers.toy import build, random_tokens, toy_dictionary
from veco_plugin.criterions.veco_sentence_prediction import (
    VecoSentencePredictionCriterion,
    VecoSentencePredictionCriterionConfig,
)
from veco_plugin.models.requests import TwoStream
from veco_plugin.models.veco_sentence_classifier import VecoSentenceClassifier
from veco_plugin.modules.pair_layout import stack_pair

HEAD = "sentence_classification_head"


def classifier(d, plug_in: bool, seed: int = 1) -> VecoSentenceClassifier:
    base = build("veco_tiny", d, seed=seed, pooler_dropout=0.0)
    model = VecoSentenceClassifier(base.args, base.encoder)
    model.register_classification_head(HEAD, num_classes=3, plug_in=plug_in)
    return model.eval()


def label_task(n_classes: int = 3):
    labels = toy_dictionary(0)
    for i in range(n_classes):
        labels.add_symbol(str(i))
    return SimpleNamespace(label_dictionary=labels)


def sample(tokens, targets, translation=None):
    net_input = {"src_tokens": tokens, "src_lengths": tokens.ne(1).sum(1)}
    if translation is not None:
        net_input["translation_tokens"] = translation
    return {"net_input": net_input, "target": targets, "ntokens": int(tokens.ne(1).sum())}


def test_plug_out_equals_fairseq_roberta_sentence_prediction():
    d = toy_dictionary()
    veco = classifier(d, plug_in=False)
    roberta = build(
        "roberta",
        d,
        seed=2,
        encoder_layers=2,
        encoder_embed_dim=64,
        encoder_ffn_embed_dim=256,
        encoder_attention_heads=4,
        pooler_dropout=0.0,
    ).eval()
    roberta.register_classification_head(HEAD, num_classes=3)
    roberta.load_state_dict(
        {k: v for k, v in veco.state_dict().items() if ".cross_attn" not in k}, strict=True
    )
    tokens = random_tokens(d, 5, 11, pad_tail=4)
    targets = torch.tensor([0, 1, 2, 1, 0])
    with torch.no_grad():
        ours, _ = veco(tokens, features_only=True, classification_head_name=HEAD)
        theirs, _ = roberta(tokens, features_only=True, classification_head_name=HEAD)
    assert ours.shape == (5, 3)
    # other code paths (fairseq's MultiheadAttention vs SDPA): equal within fp32 rounding,
    # not bit for bit; the classes agree (each row's best logit is ahead by > 0.6)
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-5)
    task = label_task()
    mine = VecoSentencePredictionCriterion(VecoSentencePredictionCriterionConfig(), task)
    fairseq = SentencePredictionCriterion(SentencePredictionConfig(), task)
    with torch.no_grad():
        a = mine(veco, sample(tokens, targets))
        b = fairseq(roberta, sample(tokens, targets))
    torch.testing.assert_close(a[0], b[0], rtol=1e-5, atol=1e-5)
    assert a[1] == b[1] == 5
    assert int(a[2]["ncorrect"]) == int(b[2]["ncorrect"]) == int(a[2]["ncorrect_x"])


def test_plug_in_head_reads_h_and_s_of_both_sides():
    d = toy_dictionary()
    model = classifier(d, plug_in=True)
    head = model.classification_heads[HEAD]
    assert head.dense.in_features == 128 and model.is_plug_in(HEAD)
    x = random_tokens(d, 3, 9, seed=1, pad_tail=2)
    y = random_tokens(d, 3, 12, seed=2, pad_tail=5)
    with torch.no_grad():
        logits, _ = model(x, classification_head_name=HEAD, translation_tokens=y)
        pair = stack_pair(x, y, d.pad())
        out = model(requests={"p": TwoStream(pair, features=True)})
        h, s = out["p"].h, out["p"].s  # (6, 12, 64)
        cls = torch.cat([h[:, 0], s[:, 0]], dim=-1)  # [H^L ; S^L] at <s>, (6, 128)
        expected = head.out_proj(torch.tanh(head.dense(cls)))
    assert logits.shape == (6, 3)
    # the same stream forward and head layers on the same shapes: exact
    torch.testing.assert_close(logits, expected, rtol=0, atol=0)
    # x's rows depend on y through S_x (cross-attention), H_x alone would not
    with torch.no_grad():
        other, _ = model(x, classification_head_name=HEAD, translation_tokens=y.flip(0))
    assert not torch.equal(other[:3], logits[:3])


def test_plug_in_without_translation_falls_back_with_a_warning(caplog):
    d = toy_dictionary()
    model = classifier(d, plug_in=True)
    head = model.classification_heads[HEAD]
    x = random_tokens(d, 4, 10, pad_tail=3)
    with caplog.at_level(logging.WARNING), torch.no_grad():
        logits, _ = model(x, classification_head_name=HEAD)
        model(x, classification_head_name=HEAD)
        h, _ = model(x, features_only=True)  # plug-out H^L
        expected = head(torch.cat([h, h], dim=-1))
    warnings = [r for r in caplog.records if "falling back to plug-out" in r.getMessage()]
    assert len(warnings) == 1  # once per model
    assert logits.shape == (4, 3)
    assert torch.equal(logits, expected)


def test_criterion_plug_in_one_forward_labels_both_sides():
    d = toy_dictionary()
    model = classifier(d, plug_in=True).train()
    calls = []
    model.register_forward_hook(lambda *_: calls.append(1))
    criterion = VecoSentencePredictionCriterion(
        VecoSentencePredictionCriterionConfig(), label_task()
    )
    x = random_tokens(d, 4, 10, seed=3)
    y = random_tokens(d, 4, 8, seed=4)
    targets = torch.tensor([2, 0, 1, 1])
    loss, size, log = criterion(model, sample(x, targets, y))
    assert len(calls) == 1 and size == 8 and log["nexamples"] == 4
    with torch.no_grad():
        model.eval()
        logits, _ = model(x, classification_head_name=HEAD, translation_tokens=y)
    reference = torch.nn.functional.cross_entropy(logits, targets.repeat(2), reduction="sum")
    model.eval()
    with torch.no_grad():
        eval_loss, _, _ = criterion(model, sample(x, targets, y))
    torch.testing.assert_close(eval_loss, reference)
    loss.backward()
    assert model.classification_heads[HEAD].dense.weight.grad is not None
    cross = [p.grad for n, p in model.named_parameters() if ".cross_attn." in n]
    assert cross and all(g is not None for g in cross)


def test_stack_pair_pads_to_the_longer_side():
    x = torch.tensor([[0, 5, 2], [0, 6, 2]])
    y = torch.tensor([[0, 7, 8, 2], [0, 9, 2, 1]])
    assert stack_pair(x, y, 1).tolist() == [
        [0, 5, 2, 1],
        [0, 6, 2, 1],
        [0, 7, 8, 2],
        [0, 9, 2, 1],
    ]


def test_sentence_eval_names_its_own_flag_for_a_missing_checkpoint(tmp_path):
    from veco_plugin.cli.common import parse_checkpoints
    from veco_plugin.errors import VecoUserError

    missing = tmp_path / "no.pt"
    with pytest.raises(VecoUserError, match=f"--checkpoint a={missing}: no such file"):
        parse_checkpoints([f"a={missing}"])
