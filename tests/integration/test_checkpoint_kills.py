"""No checkpoint ever lost: ``kill -9`` around saves leaves only complete checkpoint
files, and a truncated ``checkpoint_last.pt`` is named and skipped on resume."""

import glob
import os
import random
import signal
import threading
import time

import torch

from tests.helpers.runner import BIN, WARM, env, pretrain_args, run
from veco_plugin.checkpoints.trusted_load import load_trusted


def _args(data, save, max_update, *extra):
    # a save at every update, so kills land in and around saves
    return pretrain_args(
        data,
        save,
        "ca_mlm",
        max_update,
        "--save-interval-updates",
        "1",
        "--keep-interval-updates",
        "2",
        "--disable-validation",
        "--log-interval",
        "1",
        *extra,
    )


def _kill_during_training(args, save, rng) -> None:
    """fairseq-train (forked from the tests' zygote: a kill -9 needs no cold start)
    killed at a random moment after its next save began."""
    proc = WARM.popen([os.path.join(BIN, "fairseq-train"), *map(str, args)], env())
    assert proc is not None and proc.stdout is not None
    threading.Thread(target=proc.stdout.read, daemon=True).start()  # never a full pipe
    deadline = time.time() + 120
    seen = len(glob.glob(str(save / "checkpoint_*_*.pt")))
    while time.time() < deadline and proc.poll() is None:
        if len(glob.glob(str(save / "checkpoint_*_*.pt"))) > seen or os.path.exists(
            save / "checkpoint_last.pt.tmp"
        ):
            break
        time.sleep(0.01)
    time.sleep(rng.uniform(0.0, 0.3))
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def _updates(path) -> int:
    return load_trusted(path)["optimizer_history"][-1]["num_updates"]


def test_kills_around_saves_leave_complete_checkpoints_and_resume(pretrain_data, tmp_path):
    save = tmp_path / "ck"
    rng = random.Random(0)
    for _ in range(3):  # each kill lands at another point of a save (a random delay)
        _kill_during_training(_args(pretrain_data, save, 100000), save, rng)
        for path in glob.glob(str(save / "checkpoint*.pt")):
            load_trusted(path)  # every checkpoint file left is complete
    last = save / "checkpoint_last.pt"
    done = _updates(last)
    assert done > 0

    out = run("fairseq-train", _args(pretrain_data, save, done + 2)).stdout
    assert f"@ {done} updates" in out  # resumed where the killed run stopped

    # a truncated checkpoint_last.pt (as fairseq's own in-place copy can leave) is named
    # and the newest complete checkpoint takes over
    data = last.read_bytes()
    last.write_bytes(data[: len(data) // 2])
    proc = run("fairseq-train", _args(pretrain_data, save, done + 4))
    log = proc.stdout + proc.stderr
    assert f"{last} is truncated" in log and "resuming from" in log
    assert _updates(last) == done + 4


def test_killed_and_resumed_run_ends_where_an_uninterrupted_one_does(pretrain_data, tmp_path):
    """fairseq restores the data iterator's position inside an epoch; with the zipped
    sub-batches, the masks and the dropout seeded per update, a run killed and resumed
    several times ends with the very parameters of an uninterrupted run."""
    updates = 16
    flags = ("--dropout", "0.1")
    run("fairseq-train", _args(pretrain_data, tmp_path / "straight", updates, *flags))
    save = tmp_path / "killed"
    rng = random.Random(1)
    for _ in range(3):
        _kill_during_training(_args(pretrain_data, save, updates, *flags), save, rng)
    assert _updates(save / "checkpoint_last.pt") < updates
    run("fairseq-train", _args(pretrain_data, save, updates, *flags))
    straight = load_trusted(tmp_path / "straight" / "checkpoint_last.pt")["model"]
    resumed = load_trusted(save / "checkpoint_last.pt")["model"]
    assert straight.keys() == resumed.keys()
    for name, value in straight.items():
        assert torch.equal(resumed[name], value), name
