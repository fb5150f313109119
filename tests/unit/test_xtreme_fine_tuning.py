"""Fine-tuning as XTREME's scripts do it, where fairseq's defaults differ: new random batches
each epoch (seeded), the checkpoint of the best exact dev score with the first of tied ones
kept, and XTREME's cut of a sentence pair to 128 positions."""

import os
from types import SimpleNamespace

import pytest
from fairseq import checkpoint_utils
from fairseq.data import FairseqDataset, ListDataset
from fairseq.dataclass.configs import CheckpointConfig
from fairseq.logging import metrics
from fairseq.tasks import FairseqTask

from veco_plugin.corpora.xtreme import cut_pair
from veco_plugin.criterions.veco_sentence_prediction import VecoSentencePredictionCriterion
from veco_plugin.data.random_order import VecoRandomOrderDataset
from veco_plugin.tasks.fine_tuning import training_order
from veco_plugin.xtreme.updates import parse_train_args

EXAMPLES = 40


class _Ids(FairseqDataset):
    """Examples 0 .. EXAMPLES - 1, each its own id, in their order (fairseq's default)."""

    def __getitem__(self, index):
        return index

    def __len__(self):
        return EXAMPLES

    def num_tokens(self, index):
        return 5

    def collater(self, samples):
        return samples


def _epochs(dataset, seed: int, epochs: int = 2):
    """Each epoch's batches of example ids (4 a batch), as fairseq-train's iterator gives them."""
    task = FairseqTask(SimpleNamespace(rebuild_batches=True))
    iterator = task.get_batch_iterator(dataset, max_sentences=4, seed=seed, epoch=1)
    return [[tuple(b) for b in iterator.next_epoch_itr(shuffle=True)] for _ in range(epochs)]


def test_each_epoch_draws_new_random_batches_and_a_seed_the_same_ones():
    """RandomSampler (run_tag.py:85, run_classify.py:102): every epoch its own batches of
    random examples; the same --seed draws the same ones."""
    examples = _Ids()
    first, second = _epochs(VecoRandomOrderDataset(examples), seed=1)
    assert sorted(i for b in first for i in b) == list(range(EXAMPLES))  # every example once
    assert sorted(i for b in second for i in b) == list(range(EXAMPLES))
    assert set(first) != set(second)  # other batches, not the same ones reordered
    assert _epochs(VecoRandomOrderDataset(examples), seed=1) == [first, second]
    assert _epochs(VecoRandomOrderDataset(examples), seed=2) != [first, second]
    # fairseq's default: the batches of the first epoch, reordered
    plain = _epochs(examples, seed=1)
    assert set(plain[0]) == set(plain[1]) and plain[0] != plain[1]


def test_random_batches_reach_the_training_split_alone():
    args = ["DATA", "--task", "veco_tagging", "--arch", "veco_tiny", "--batch-size", "4"]
    cfg = parse_train_args(args + ["--random-batches"], "test").task
    assert cfg.rebuild_batches is True and cfg.train_subset == "train"
    examples = ListDataset([0], sizes=[1])
    assert isinstance(training_order(cfg, "train", examples), VecoRandomOrderDataset)
    assert training_order(cfg, "valid", examples) is examples
    default = parse_train_args(args, "test").task
    assert default.rebuild_batches is False and default.best_on_ties == "later"
    assert training_order(default, "train", examples) is examples


def test_dev_accuracy_is_exact():
    """80.04 (2001 of 2500) is not 80.0: fairseq's logged accuracy is rounded to 0.1."""
    logs = [{"ncorrect_x": 1001, "nexamples": 1250, "ncorrect": 1001, "nsentences": 1250}] + [
        {"ncorrect_x": 1000, "nexamples": 1250, "ncorrect": 1000, "nsentences": 1250}
    ]
    for log in logs:
        log.update(loss=1.0, sample_size=log["nexamples"], ntokens=1)
    with metrics.aggregate(new_root=True) as valid:
        for log in logs:  # fairseq reduces each validation batch as it comes
            VecoSentencePredictionCriterion.reduce_metrics([log])
    values = valid.get_smoothed_values()
    assert values["x_accuracy"] == 100 * 2001 / 2500 and values["accuracy"] == 80.0


class _Trainer:
    """What ``checkpoint_utils.save_checkpoint`` asks of fairseq's Trainer; writes an empty
    file per checkpoint and records which update became ``checkpoint_best.pt``."""

    data_parallel_rank, checkpoint_suffix = 0, ""
    should_save_checkpoint_on_current_rank = True
    always_call_state_dict_during_save_checkpoint = False

    def __init__(self, ties: str) -> None:
        self.task = SimpleNamespace(cfg=SimpleNamespace(best_on_ties=ties))
        self.updates, self.best = 0, []

    def consolidate_optimizer(self) -> None:
        pass

    def get_num_updates(self) -> int:
        return self.updates

    def save_checkpoint(self, filename, extra_state) -> None:
        open(filename, "wb").close()
        if os.path.basename(filename) == "checkpoint_best.pt":
            self.best.append(self.updates)


def _kept(tmp_path, scores, ties):
    """The updates whose checkpoint became checkpoint_best.pt, scored ``scores`` every 100."""
    cfg = CheckpointConfig(
        save_dir=str(tmp_path / ties),
        no_epoch_checkpoints=True,
        no_last_checkpoints=True,
        best_checkpoint_metric="x_accuracy",
        maximize_best_checkpoint_metric=True,
    )
    epoch_itr = SimpleNamespace(epoch=1, end_of_epoch=lambda: False, state_dict=lambda: {})
    trainer = _Trainer(ties)
    if hasattr(checkpoint_utils.save_checkpoint, "best"):  # fairseq's process-wide best
        del checkpoint_utils.save_checkpoint.best
    try:
        for trainer.updates, score in zip(range(100, 100 * len(scores) + 1, 100), scores):
            checkpoint_utils.save_checkpoint(cfg, trainer, epoch_itr, score)
    finally:
        del checkpoint_utils.save_checkpoint.best
    return trainer.best


@pytest.mark.parametrize(
    "scores, xtreme, fairseq",
    [
        ([50.0, 62.5, 62.5, 61.0, 62.5], [100, 200], [100, 200, 300, 500]),
        ([80.0, 80.04], [100, 200], [100, 200]),  # exact: the second is better
        ([80.0, 80.0], [100], [100, 200]),  # the same two rounded to 0.1: a tie
    ],
)
def test_tied_best_checkpoints_keep_the_first_as_xtreme(tmp_path, scores, xtreme, fairseq):
    """run_classify.py:258 / run_tag.py:197: replaced on a strictly greater dev score."""
    assert _kept(tmp_path, scores, "earlier") == xtreme
    assert _kept(tmp_path, scores, "later") == fairseq


@pytest.mark.parametrize(
    "first, second, length, cut",
    [
        (10, 3, 10, (3, 3)),  # the longer side first, then the second on ties
        (4, 9, 12, (4, 4)),
        (7, None, 5, (3, None)),  # one sentence: <s> a </s>
        (3, 2, 128, (3, 2)),  # fits: as it is
        (100, 1, 6, (1, 1)),  # a piece each at least
    ],
)
def test_a_pair_is_cut_as_xtremes_longest_first(first, second, length, cut):
    """processors/utils.py:124 (encode_plus, longest_first): <s> a </s></s> b </s> fits."""
    a = " ".join(f"a{i}" for i in range(first))
    b = None if second is None else " ".join(f"b{i}" for i in range(second))
    got_a, got_b = cut_pair(a, b, length)
    assert got_a.split() == a.split()[: cut[0]]
    assert (got_b if got_b is None else got_b.split()) == (b if b is None else b.split()[: cut[1]])


def test_xtremes_whitespace_mapping_widens_an_answer_to_its_words():
    """benchmarks/qa_whitespace.py: the words (processors/squad.py's whitespace) an answer's
    characters touch; Chinese without spaces gets its whole clause."""
    from benchmarks.qa_whitespace import whitespace_answer
    from veco_plugin.corpora.squad import Answer

    context = "北京是中国的首都。\u202fIt has 21 million people."
    assert whitespace_answer(context, Answer("中国", 3)) == "北京是中国的首都。"
    assert whitespace_answer(context, Answer("21 mill", 17)) == "21 million"
    assert whitespace_answer(context, Answer("people", 28)) == "people."
