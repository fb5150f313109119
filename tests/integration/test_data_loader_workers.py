"""DataLoader workers of ``veco_pretraining``'s iterators, as fairseq-train drives them
(``--num-workers 1``, its default; ``--data-buffer-size 10``, its default): validation
keeps one iterator and its workers for the run; a training epoch's workers end with the
epoch. Before, each validation and each epoch started new workers that fairseq kept
(persistent) and dropped: they lived on until a garbage collection, which then waited
5 s for each (seen as checkpoint writes of 10-50 s with --num-workers 2)."""

import gc
import multiprocessing
import time

import pytest
from fairseq import tasks

from tests.helpers.runner import train_cfg
from veco_plugin.pretraining_command import PretrainingCommand


@pytest.fixture
def task(small_data):
    command = PretrainingCommand(
        data=small_data,
        save_dir="unused",  # nothing is trained
        criterion="ca_mlm",
        updates=1,
        warmup=None,
        max_tokens=4000,
        max_positions=48,
        bi_positions=48,
    )
    cfg = train_cfg(command.args())
    task = tasks.setup_task(cfg.task)
    for split in ("train", "valid"):
        task.load_dataset(split)
    return task


def _iterator(task, split):
    return task.get_batch_iterator(
        task.dataset(split), max_tokens=4000, seed=1, num_workers=1, data_buffer_size=10
    )


def _workers():
    return {p.pid for p in multiprocessing.active_children()}


def test_validation_keeps_one_iterator_and_its_workers(task):
    before = _workers()
    pids = []
    for _ in range(3):  # three validations
        itr = _iterator(task, "valid").next_epoch_itr(shuffle=False, set_dataset_epoch=False)
        assert sum(1 for _ in itr) > 0
        pids.append(_workers() - before)
    assert _iterator(task, "valid") is _iterator(task, "valid")
    assert len(pids[0]) == 1 and pids[0] == pids[1] == pids[2]  # the same worker throughout


def test_a_training_epochs_workers_end_with_it(task):
    gc.disable()  # the old code's workers ended only in a garbage collection
    try:
        before = _workers()
        for epoch in (1, 2):
            epochs = _iterator(task, "train")
            assert epochs is not _iterator(task, "train")  # batches drawn per epoch
            itr = epochs.next_epoch_itr(shuffle=True)
            next(itr)
            assert len(_workers() - before) == 1
            assert sum(1 for _ in itr) > 0
            del epochs, itr
            deadline = time.monotonic() + 10  # fairseq's reader thread ends it, then exits
            while _workers() != before and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _workers() == before, f"epoch {epoch}'s worker outlived it"
    finally:
        gc.enable()
