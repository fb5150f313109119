"""From a folder of text to a trained and resumed job: ``veco-prepare-pretraining``
shards it (the ``shards`` fixture), torchrun (or srun's environment) trains over the
shards on CPU as one 2-rank job, which resumes on 2 ranks or on 1 process.

Every run is ``fairseq-train DATA/shard0:DATA/shard1 --task veco_pretraining`` with
``ca_mlm`` on two tiny shards (40 En/De segments and 40 En-De pairs each; 4 updates of
two batches make an epoch), dropout off, so that one process with ``--update-freq 2``
and two ranks of one batch each compute the same updates (fp32 reduction order aside).
"""

import contextlib
import os
import shutil
import signal
import socket
import sys
import time

import pytest
import torch

from tests.helpers.refusals import train_refused
from tests.helpers.runner import BIN, REPO, env, json_logs, run, start
from tests.helpers.shards import assert_same_losses, losses, shard_train_args

UPDATES = 8  # crosses into epoch 2 (shard 1)
STOP = 3  # the 2-rank run stops here, mid-epoch 1
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _torchrun(script, args, timeout=300):
    """torchrun's agent forked from the test process's warm interpreter (as ``run`` starts
    fairseq-train; its ranks start cold, as torchrun starts them): its output."""
    argv = [*TORCHRUN, "--master-port", str(_free_port()), script, *[str(a) for a in args]]
    proc = start(argv)
    out, _ = proc.communicate(timeout=timeout)
    out = out.decode(errors="replace")
    assert proc.returncode == 0, out[-6000:]
    return out


@pytest.fixture(scope="module")
def one_process(shards, tmp_path_factory):
    """One process, two batches per update: the reference trajectory."""
    save = tmp_path_factory.mktemp("one")
    return run(
        "fairseq-train", shard_train_args(shards, save, UPDATES, "--update-freq", "2")
    ).stdout


def test_epochs_cycle_through_the_shards(one_process, shards):
    first, second = shards.split(":")
    assert f"epoch 1: train reads shard 0 of 2, {first}" in one_process
    assert f"epoch 2: train reads shard 1 of 2, {second}" in one_process
    epochs = {int(r["num_updates"]): r["epoch"] for r in json_logs(one_process)}
    second = min(u for u, e in epochs.items() if e == 2)
    assert STOP < second <= UPDATES  # the resumed runs below cross into shard 1
    assert all(e == 1 for u, e in epochs.items() if u < second)


def test_torchrun_trains_one_job_and_resumes_on_one_or_two_processes(one_process, shards, tmp_path):
    """torchrun's two processes are one 2-rank job (no --distributed-world-size): equal
    ranks, the one-process trajectory; its checkpoint continues on 2 ranks (the README's
    line: fairseq's default DDP wrapping) and on 1 process (with --update-freq 2) with the
    next unread batches, into shard 1."""
    want = losses(one_process)
    save = tmp_path / "two"
    args = ["--cpu", "--distributed-backend", "gloo", "--ddp-backend", "legacy_ddp"]
    two = _torchrun(
        os.path.join(REPO, "tests", "helpers", "torchrun_params.py"),
        shard_train_args(shards, save, STOP, *args[1:]),
    )
    assert_same_losses(losses(two), want, range(1, STOP + 1))
    ranks = [torch.load(save / f"params.rank{r}.pt") for r in range(2)]
    assert ranks[0].keys() == ranks[1].keys()
    for name in ranks[0]:  # the same all-reduced gradients applied on each rank: exact
        assert torch.equal(ranks[0][name], ranks[1][name]), name

    single = tmp_path / "single"
    shutil.copytree(save, single)
    # the README's torchrun line as written: fairseq's default --ddp-backend (pytorch_ddp,
    # which wrapped a CPU model with device_ids=[0]) and no --distributed-backend
    resumed_two = _torchrun(
        os.path.join(BIN, "fairseq-train"), shard_train_args(shards, save, UPDATES, "--cpu")
    )
    assert "torchrun: rank 1 of 2" in resumed_two
    assert f"{STOP} updates" in resumed_two
    assert_same_losses(losses(resumed_two), want, range(STOP + 1, UPDATES + 1))
    assert "epoch 2: train reads shard 1 of 2" in resumed_two

    resumed_one = run(
        "fairseq-train", shard_train_args(shards, single, UPDATES, "--update-freq", "2")
    ).stdout
    assert_same_losses(losses(resumed_one), want, range(STOP + 1, UPDATES + 1))
    assert "resuming epoch 1 on 1 processes (saved by 2)" in resumed_one
    assert "epoch 2: train reads shard 1 of 2" in resumed_one


def test_srun_environment_makes_one_job(one_process, shards, tmp_path):
    """The variables srun sets for two tasks on one node: one 2-rank job."""
    port = _free_port()
    procs = [  # forked warm, each with its task's variables (read once training starts)
        start(
            [
                os.path.join(BIN, "fairseq-train"),
                *shard_train_args(
                    shards,
                    tmp_path / "slurm",
                    STOP,
                    "--distributed-backend",
                    "gloo",
                    "--ddp-backend",
                    "legacy_ddp",
                    "--distributed-port",
                    str(port),
                ),
            ],
            environ=env(
                SLURM_JOB_ID="4242",
                SLURM_JOB_NODELIST="localhost",
                SLURM_STEP_NODELIST="localhost",
                SLURM_NNODES="1",
                SLURM_NTASKS="2",
                SLURM_NTASKS_PER_NODE="2",
                SLURM_PROCID=str(rank),
                SLURM_LOCALID=str(rank),
                SLURM_NODEID="0",
            ),
        )
        for rank in range(2)
    ]
    outputs = [p.communicate(timeout=300)[0].decode(errors="replace") for p in procs]
    for p, out in zip(procs, outputs):
        assert p.returncode == 0, out[-3000:]
    assert "srun: rank 0 of 2 (tcp://localhost:" in outputs[0]
    assert_same_losses(losses(outputs[0]), losses(one_process), range(1, STOP + 1))


def test_a_second_run_on_the_same_save_dir_is_refused(shards, tmp_path):
    save = tmp_path / "busy"
    first = start([os.path.join(BIN, "fairseq-train"), *shard_train_args(shards, save, 100000)])
    try:
        deadline = time.time() + 120
        lock = save / "train.lock"  # taken before the first update, the holder written in it
        while not (lock.exists() and lock.read_text().startswith("pid")):
            assert time.time() < deadline and first.poll() is None, "the first run took no lock"
            time.sleep(0.2)
        second = run("fairseq-train", shard_train_args(shards, save, 3), check=False)
    finally:
        with contextlib.suppress(ProcessLookupError):  # it may have ended
            os.killpg(first.pid, signal.SIGKILL)  # its whole process group
        first.communicate()
    assert second.returncode == 1
    last = second.stderr.strip().splitlines()[-1]
    assert last.startswith(f"fairseq-train: error: --save-dir {save} is in use by another ")
    assert f"pid {first.pid}" in last and "Traceback" not in second.stderr


def _bad_shard(shards, tmp_path, change):
    first, second = shards.split(":")
    bad = tmp_path / "bad"
    shutil.copytree(second, bad)
    change(bad)
    return f"{first}:{bad}", str(bad)


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda d: shutil.rmtree(d / "mono" / "de"), "--mono-langs de: no {bad}/mono/de"),
        (
            lambda d: (d / "dict.txt").open("a").write("extra 1\n"),
            "shard {bad}: {bad}/dict.txt differs from",
        ),
    ],
    ids=["missing-language", "other-dictionary"],
)
def test_a_bad_shard_is_one_line_before_training(shards, tmp_path, change, words):
    data, bad = _bad_shard(shards, tmp_path, change)
    line = train_refused(shard_train_args(data, tmp_path / "save", 3))
    assert words.format(bad=bad) in line
    assert not (tmp_path / "save" / "checkpoint_last.pt").exists()  # no update ran


@pytest.mark.parametrize(
    "extra, environ, words",
    [
        (
            ["--distributed-world-size", "3"],
            {"WORLD_SIZE": "2", "RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"},
            "--distributed-world-size 3 contradicts torchrun's 2 processes",
        ),
        (
            ["--distributed-world-size", "2"],
            {},
            "--distributed-world-size 2 without GPUs needs one process per rank",
        ),
    ],
    ids=["contradicts-torchrun", "no-launcher"],
)
def test_a_world_that_cannot_start_is_one_line(shards, tmp_path, extra, environ, words):
    args = shard_train_args(shards, tmp_path / "save", 3, "--distributed-backend", "gloo", *extra)
    proc = run("fairseq-train", args, check=False, env=env(**environ))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert words in proc.stderr.strip().splitlines()[-1]
