"""Sub-batch sizes: the padded tokens actually fed per update stay within the flags.

``--max-tokens`` bounds a whole update (monolingual + bilingual sub-batch, the TLM
concatenation included); ``--{mono,bi}-max-tokens`` and ``--{mono,bi}-batch-size``
size each sub-batch on its own (the paper: 1024 monolingual vs 4096 bilingual pairs)."""

import itertools

import pytest
from fairseq import tasks

from tests.helpers.runner import train_cfg
from veco_plugin.pretraining_command import PretrainingCommand


def _epoch(data, max_tokens, *flags, limit=None, split="train"):
    """The batches of ``split`` as fairseq-train's toy ``ca_mlm`` run draws them: its
    command (``PretrainingCommand``) with ``--max-tokens max_tokens`` and ``flags``."""
    command = PretrainingCommand(
        data=str(data),
        save_dir="unused",  # nothing is trained
        criterion="ca_mlm",
        updates=1,
        warmup=None,
        max_tokens=max_tokens,
        max_positions=48,
        bi_positions=48,
        extra=flags,
    )
    cfg = train_cfg(command.args())
    task = tasks.setup_task(cfg.task)
    task.load_dataset(split)
    dataset = task.dataset(split)
    valid = split != "train"
    itr = task.get_batch_iterator(
        dataset,
        max_tokens=cfg.dataset.max_tokens_valid if valid else cfg.dataset.max_tokens,
        max_sentences=cfg.dataset.batch_size_valid if valid else cfg.dataset.batch_size,
        required_batch_size_multiple=1,
        seed=1,
    )
    return dataset, list(itertools.islice(itr.next_epoch_itr(shuffle=True), limit))


def _fed(batch, kind):
    sub = batch[kind]
    tokens = sub["pair_tokens"].numel() + (
        sub["concat_tokens"].numel() if "concat_tokens" in sub else 0
    )
    return tokens, sub["nsentences"]


def test_max_tokens_bounds_the_whole_update(small_data):
    dataset, batches = _epoch(small_data, 2000)
    assert len(batches) > 10
    seen = {"mono": set(), "bi": set()}
    for batch in batches:
        mono, _ = _fed(batch, "mono")
        bi, _ = _fed(batch, "bi")
        assert mono <= 1000 and bi <= 1000 and mono + bi <= 2000
        assert "concat_tokens" in batch["bi"] and "concat_tokens" not in batch["mono"]
        for kind in seen:
            seen[kind].update(batch[kind]["id"].tolist())
    # nothing dropped: every bilingual pair is in the epoch (mono ids are per language)
    assert seen["bi"] == set(range(len(dataset.datasets["bi"])))


def test_each_sub_batch_has_its_own_size(pretrain_data):
    _, batches = _epoch(
        pretrain_data,
        4000,
        "--mono-max-tokens",
        "600",
        "--bi-max-tokens",
        "3000",
        "--mono-batch-size",
        "4",
        "--bi-batch-size",
        "16",
        limit=80,
    )
    mono_pairs, bi_pairs = [], []
    for batch in batches:
        mono, n_mono = _fed(batch, "mono")
        bi, n_bi = _fed(batch, "bi")
        assert mono <= 600 and n_mono <= 4 and bi <= 3000 and n_bi <= 16
        mono_pairs.append(n_mono)
        bi_pairs.append(n_bi)
    assert max(mono_pairs) == 4 and max(bi_pairs) == 16  # the sizes are really used


def test_sub_batch_budgets_beyond_max_tokens_are_refused(pretrain_data):
    with pytest.raises(ValueError, match="raise --max-tokens to at least 3001"):
        _epoch(pretrain_data, 2000, "--mono-max-tokens", "3000")


def test_a_sub_batch_below_the_longest_pair_is_refused_naming_the_flags(small_data):
    """Was fairseq's AssertionError ("Sentences lengths should not exceed max_tokens")."""
    with pytest.raises(ValueError) as info:
        _epoch(small_data, 60)
    said = str(info.value)
    assert said.startswith("a monolingual pair of ") and "--max-tokens 60 leaves" in said
    assert "raise --max-tokens to at least" in said and "--max-mono-positions" in said
    with pytest.raises(ValueError, match="--bi-max-tokens 20: raise it to at least"):
        _epoch(small_data, 4000, "--bi-max-tokens", "20")


def test_validation_batches_follow_max_tokens_valid(pretrain_data):
    _, batches = _epoch(pretrain_data, 4000, "--max-tokens-valid", "800", split="valid")
    assert batches
    for batch in batches:
        assert _fed(batch, "mono")[0] + _fed(batch, "bi")[0] <= 800
