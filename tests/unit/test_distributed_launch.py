"""Launch environments (torchrun, srun) and resuming an epoch on another world size."""

import shlex
from pathlib import Path

import pytest
from fairseq.data import FairseqDataset
from fairseq.data.iterators import EpochBatchIterator

from tests.helpers.runner import REPO, USER_DIR, train_cfg
from veco_plugin.distributed.launch import first_host, launched_world
from veco_plugin.distributed.resume import VecoEpochBatchIterator
from veco_plugin.errors import VecoUserError


@pytest.mark.parametrize(
    "nodelist, host",
    [
        ("localhost", "localhost"),
        ("node07", "node07"),
        ("node[07-09,12]", "node07"),
        ("gpu[003,010-012],cpu1", "gpu003"),
        ("a-b-1,a-b-2", "a-b-1"),
    ],
)
def test_first_host_of_a_slurm_node_list(nodelist, host):
    assert first_host(nodelist) == host


def test_torchrun_environment():
    env = {
        "MASTER_ADDR": "h",
        "MASTER_PORT": "1",
        "WORLD_SIZE": "4",
        "RANK": "3",
        "LOCAL_RANK": "1",
    }
    world = launched_world(env, port=-1)
    assert (world.launcher, world.size, world.rank, world.local_rank) == ("torchrun", 4, 3, 1)
    assert world.init_method == "env://"
    assert launched_world(dict(env, WORLD_SIZE="1", RANK="0"), port=-1) is None


def test_srun_environment():
    env = {
        "SLURM_JOB_ID": "123",
        "SLURM_STEP_NODELIST": "n[4-5]",
        "SLURM_JOB_NODELIST": "n[1-5]",
        "SLURM_NTASKS": "4",
        "SLURM_PROCID": "2",
        "SLURM_LOCALID": "0",
    }
    world = launched_world(env, port=-1)
    assert (world.launcher, world.size, world.rank, world.local_rank) == ("srun", 4, 2, 0)
    assert world.init_method == f"tcp://n4:{10000 + 123}"  # the step's first node
    assert launched_world(env, port=2222).init_method == "tcp://n4:2222"
    assert launched_world(dict(env, SLURM_NTASKS="1"), port=-1) is None  # one task: no job
    assert launched_world({"SLURM_JOB_NODELIST": "n1"}, port=-1) is None  # sbatch's shell


def test_a_bad_node_list_is_one_line():
    with pytest.raises(VecoUserError, match="not a Slurm node list"):
        first_host("[1-2]")


class _Items(FairseqDataset):
    """``n`` examples of one token each; a batch collates to its indices."""

    def __init__(self, n: int):
        self.n = n

    def __getitem__(self, index):
        return index

    def __len__(self):
        return self.n

    def collater(self, samples):
        return list(samples)

    def num_tokens(self, index):
        return 1

    def size(self, index):
        return 1


def _iterator(num_shards: int, shard_id: int) -> EpochBatchIterator:
    batches = [[2 * b, 2 * b + 1] for b in range(10)]  # 10 batches, shuffled per epoch
    return VecoEpochBatchIterator.adopt(
        EpochBatchIterator(
            _Items(20),
            _Items(20).collater,
            batches,
            seed=3,
            num_shards=num_shards,
            shard_id=shard_id,
        )
    )


def _read(iterator, count=None):
    itr = iterator.next_epoch_itr(shuffle=True)
    out = []
    while itr.has_next() and (count is None or len(out) < count):
        batch = next(itr)
        if batch:  # fairseq pads the last round of ranks with empty batches
            out.append(tuple(batch))
    return out


def test_the_epoch_resumes_with_the_next_unread_batch_on_fewer_processes():
    everything = _read(_iterator(1, 0))
    ranks = [_iterator(2, r) for r in range(2)]
    for rank in ranks:
        _read(rank, count=3)  # 3 updates of 2 ranks: the epoch's first 6 batches
    state = ranks[0].state_dict()
    assert state["num_shards"] == 2 and state["iterations_in_epoch"] == 3
    one = _iterator(1, 0)
    one.load_state_dict(state)
    assert _read(one) == everything[6:]


def test_the_epoch_resumes_on_more_processes():
    """1 process read 5 batches; 2 ranks start at batch 4 (read again: 5 is odd)."""
    everything = _read(_iterator(1, 0))
    single = _iterator(1, 0)
    _read(single, count=5)
    state = single.state_dict()
    ranks = [_iterator(2, r) for r in range(2)]
    for rank in ranks:
        rank.load_state_dict(state)
    rest = [_read(rank) for rank in ranks]
    assert sorted(rest[0] + rest[1]) == sorted(everything[4:])


def test_the_cluster_script_trains_with_flags_fairseq_train_knows():
    """examples/pretraining_at_scale/pretrain.sbatch: its fairseq-train line parses."""
    script = Path(REPO, "examples", "pretraining_at_scale", "pretrain.sbatch").read_text()
    command = script.split("fairseq-train ", 1)[1].replace("\\\n", " ").splitlines()[0]
    values = {"$SHARDS": "D0:D1", "$LANGS": "en,de", "$PAIRS": "en-de", "$XLMR": "x.pt"}
    values.update({"$UPDATE_FREQ": "8", "$SAVE": "save", "veco_plugin": USER_DIR})
    cfg = train_cfg([values.get(word, word) for word in shlex.split(command)])
    assert cfg.model._name == "veco_large" and cfg.task._name == "veco_pretraining"
    assert cfg.optimization.update_freq == [8] and cfg.common.bf16
    assert cfg.model.checkpoint_activations
