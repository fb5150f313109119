"""veco_tagging's model and criterion: plug-out token logits == one projection of a stock
fairseq RoBERTa's features (XTREME's head: dropout, projection), the loss is the
cross-entropy of the tagged pieces alone, and a saved head comes back as saved (today's,
and the dense + tanh head of checkpoints before version 2)."""

from types import SimpleNamespace

import torch
import torch.nn.functional as F
from fairseq.data import Dictionary
from fairseq.logging import metrics

from tests.helpers.toy import build, random_tokens, toy_dictionary
from tests.unit.test_host_syncs import HostWaits, SyncRecorder
from veco_plugin.criterions.veco_tagging import (
    CHUNKS,
    VecoTaggingCriterion,
    VecoTaggingCriterionConfig,
)
from veco_plugin.evaluation.tagging_scores import chunk_counts, chunk_f1
from veco_plugin.models.veco_token_tagger import (
    VecoTokenClassificationHead,
    VecoTokenHead,
    VecoTokenTagger,
)

HEAD = "tagging"
TAGS = 5


def tagger(d, seed: int = 1) -> VecoTokenTagger:
    base = build("veco_tiny", d, seed=seed, pooler_dropout=0.0)
    model = VecoTokenTagger(base.args, base.encoder)
    model.register_classification_head(HEAD, num_classes=TAGS)
    return model.eval()


def test_token_logits_are_one_projection_of_fairseq_robertas_features():
    """XTREME's tagger (XLMRobertaForTokenClassification): the projection of H^L at every
    position; H^L is a stock fairseq RoBERTa's with the same weights."""
    d = toy_dictionary()
    veco = tagger(d)
    roberta = build(
        "roberta",
        d,
        seed=2,
        encoder_layers=2,
        encoder_embed_dim=64,
        encoder_ffn_embed_dim=256,
        encoder_attention_heads=4,
    ).eval()
    roberta.load_state_dict(
        {k: v for k, v in veco.state_dict().items() if k.startswith("encoder.")}
        | {k: v for k, v in roberta.state_dict().items() if ".cross_attn" in k},
        strict=False,
    )
    tokens = random_tokens(d, 4, 9, pad_tail=3)
    head = veco.classification_heads[HEAD]
    with torch.no_grad():
        ours, _ = veco(tokens, features_only=True, classification_head_name=HEAD)
        features, _ = roberta(tokens, features_only=True)
        theirs = F.linear(features, head.out_proj.weight, head.out_proj.bias)
    assert ours.shape == (4, 9, TAGS)
    # other code paths (fairseq's MultiheadAttention vs SDPA): equal within fp32 rounding
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-5)


def test_the_head_is_xtremes_dropout_and_projection():
    """run_tag.py's XLMRobertaForTokenClassification: dropout at the encoder's rate, one
    Linear (C -> tags) started N(0, 0.02) with a zero bias; --pooler-dropout sets the rate."""
    d = toy_dictionary()
    base = build("veco_tiny", d, seed=1, pooler_dropout=0.1)
    model = VecoTokenTagger(base.args, base.encoder)
    model.register_classification_head(HEAD, num_classes=TAGS)
    head = model.classification_heads[HEAD]
    assert isinstance(head, VecoTokenHead)
    assert [(n, type(m).__name__) for n, m in head.named_children()] == [
        ("dropout", "Dropout"),
        ("out_proj", "Linear"),
    ]
    assert head.dropout.p == 0.1
    assert (head.out_proj.in_features, head.out_proj.out_features) == (64, TAGS)
    assert torch.equal(head.out_proj.bias, torch.zeros(TAGS))
    assert 0.015 < head.out_proj.weight.std().item() < 0.025
    assert int(head.version) == 2


def test_loss_is_the_cross_entropy_of_the_tagged_pieces():
    d = toy_dictionary()
    labels = toy_dictionary(0)
    for tag in ("ADJ", "DET", "NOUN", "PUNCT", "VERB"):
        labels.add_symbol(tag)
    task = SimpleNamespace(label_dictionary=labels)
    model = tagger(d)
    criterion = VecoTaggingCriterion(
        VecoTaggingCriterionConfig(classification_head_name=HEAD), task
    )
    tokens = random_tokens(d, 3, 8, pad_tail=2)
    target = torch.full_like(tokens, labels.pad())
    target[:, 1:6:2] = torch.tensor([[4, 6, 8], [5, 7, 4], [8, 8, 6]])  # first pieces
    sample = {
        "net_input": {"src_tokens": tokens, "src_lengths": tokens.ne(d.pad()).sum(1)},
        "target": target,
        "ntokens": int(tokens.ne(d.pad()).sum()),
        "nsentences": 3,
    }
    with torch.no_grad():
        loss, size, log = criterion(model, sample)
        logits, _ = model(tokens, features_only=True, classification_head_name=HEAD)
    tagged = target.ne(labels.pad())
    want = F.cross_entropy(logits[tagged], target[tagged] - labels.nspecial, reduction="sum")
    torch.testing.assert_close(loss, want)
    assert int(size) == 9 and int(log["ncorrect"]) == int(
        (logits[tagged].argmax(-1) == target[tagged] - labels.nspecial).sum()
    )


def _reloaded(trained: VecoTokenTagger, d) -> VecoTokenTagger:
    """A fresh tagger of today's head that loads ``trained``'s state as fairseq does."""
    fresh = tagger(d, seed=4)
    state = trained.state_dict()
    fresh.upgrade_state_dict_named(state, "")
    fresh.load_state_dict(state, strict=True)
    tokens = random_tokens(d, 2, 6)
    with torch.no_grad():
        a, _ = trained.eval()(tokens, features_only=True, classification_head_name=HEAD)
        b, _ = fresh.eval()(tokens, features_only=True, classification_head_name=HEAD)
    torch.testing.assert_close(a, b, rtol=0, atol=0)  # the same weights and calls: exact
    return fresh


def test_a_saved_head_loads_back_as_a_token_head():
    d = toy_dictionary()
    trained = tagger(d, seed=3)
    assert {k for k in trained.state_dict() if k.startswith("classification_heads.")} == {
        f"classification_heads.{HEAD}.{key}"
        for key in ("out_proj.weight", "out_proj.bias", "version")
    }
    assert isinstance(_reloaded(trained, d).classification_heads[HEAD], VecoTokenHead)


def test_a_head_saved_before_version_2_loads_and_scores_as_saved():
    """A checkpoint fine-tuned with the head of layout 1 (dense, tanh, projection at every
    token; no version key) is read with that head, and gives the logits it gave."""
    d = toy_dictionary()
    trained = tagger(d, seed=3)
    trained.register_layout_1_head(HEAD, TAGS, 64)
    old = {k for k in trained.state_dict() if k.startswith("classification_heads.")}
    assert old == {
        f"classification_heads.{HEAD}.{part}.{p}"
        for part in ("dense", "out_proj")
        for p in ("weight", "bias")
    }
    head = _reloaded(trained, d).classification_heads[HEAD]
    assert isinstance(head, VecoTokenClassificationHead) and head.dense.in_features == 64


BIO = ("B-LOC", "B-ORG", "B-PER", "I-LOC", "I-ORG", "I-PER", "O")


def _bio_batch(d, labels, model, seed: int):
    """A batch of 6 windows whose first pieces (every other piece) are tagged; half the
    windows' gold tags are the model's own predictions (so that chunks match)."""
    tokens = random_tokens(d, 6, 12, seed=seed, pad_tail=3)
    with torch.no_grad():
        logits, _ = model(tokens, features_only=True, classification_head_name=HEAD)
    g = torch.Generator().manual_seed(seed)
    classes = torch.randint(0, len(BIO), tokens.shape, generator=g)
    classes[::2] = logits.argmax(-1)[::2]
    target = torch.full_like(tokens, labels.pad())
    first = torch.zeros_like(tokens, dtype=torch.bool)
    first[:, 1:-1:2] = tokens[:, 1:-1:2] > d.eos()  # words' first pieces, not <pad>/</s>
    target[first] = classes[first] + labels.nspecial
    sample = {
        "net_input": {"src_tokens": tokens, "src_lengths": tokens.ne(d.pad()).sum(1)},
        "target": target,
        "ntokens": int(tokens.ne(d.pad()).sum()),
        "nsentences": 6,
    }
    gold = [[BIO[c] for c in row[mask].tolist()] for row, mask in zip(classes, first)]
    predicted = [
        [BIO[c] for c in row[mask].tolist()] for row, mask in zip(logits.argmax(-1), first)
    ]
    return sample, gold, predicted


def _bio_criterion(model_seed: int = 5):
    d, labels = toy_dictionary(), Dictionary()
    for tag in BIO:
        labels.add_symbol(tag)
    base = build("veco_tiny", d, seed=model_seed)
    model = VecoTokenTagger(base.args, base.encoder)
    model.register_classification_head(HEAD, num_classes=len(BIO))
    task = SimpleNamespace(label_dictionary=labels)
    criterion = VecoTaggingCriterion(
        VecoTaggingCriterionConfig(classification_head_name=HEAD), task
    )
    return d, labels, model, criterion


def test_validation_f1_is_seqevals_f1_over_the_whole_split():
    """Chunk counts summed over batches, F1 from the sums: equal, to the last bit, to
    tagging_scores' (seqeval's) F1 of all the windows' words at their first pieces."""
    d, labels, model, criterion = _bio_criterion()
    model.eval()
    batches = [_bio_batch(d, labels, model, seed) for seed in (1, 2, 3)]
    with torch.no_grad():
        logs = [criterion(model, sample)[2] for sample, _, _ in batches]
    gold = [s for _, g, _ in batches for s in g]
    predicted = [s for _, _, p in batches for s in p]
    counts = chunk_counts(gold, predicted)
    assert 0 < counts.correct < min(counts.predicted, counts.gold)
    assert [sum(log[k] for log in logs) for k in CHUNKS] == list(counts)
    with metrics.aggregate(new_root=True) as valid:
        for log in logs:  # fairseq reduces each validation batch as it comes
            VecoTaggingCriterion.reduce_metrics([log])
    assert valid.get_smoothed_values()["f1"] == 100 * chunk_f1(gold, predicted)
    with metrics.aggregate(new_root=True) as workers:  # logging outputs summed (2 workers)
        VecoTaggingCriterion.reduce_metrics([logs[0], logs[1]])
        VecoTaggingCriterion.reduce_metrics([logs[2]])
    assert workers.get_smoothed_values()["f1"] == valid.get_smoothed_values()["f1"]


def test_training_logs_no_f1_and_syncs_nothing():
    """The chunk counts need the host: training (the model in train mode) skips them."""
    d, labels, model, criterion = _bio_criterion()
    model.train()
    sample, _, _ = _bio_batch(d, labels, model.eval(), 1)
    model.train()

    def step():
        loss, _, log = criterion(model, sample)
        loss.backward()
        return log

    step()
    with SyncRecorder() as recorder, HostWaits() as ops:
        log = step()
    assert not recorder.calls and not ops.plugin_calls(), (recorder.calls, ops.plugin_calls())
    assert not set(CHUNKS) & set(log)
    with metrics.aggregate(new_root=True) as train:
        VecoTaggingCriterion.reduce_metrics([log])
    assert "f1" not in train.get_smoothed_values()
