"""A run that stops under a launcher says why, once, and the whole job ends in seconds.

torchrun's two CPU processes, and the variables srun sets for two tasks on one node, each
with a flag refused after the process group started (``dwa`` without
``--find-unused-parameters``) and with a broken shard (a language missing): the one line
``[rankN]: fairseq-train: error: ...`` appears exactly once (the first rank to reach it
writes it; every rank raises it alike), no rank prints a traceback, every process exits 1,
and torchrun's summary names the error (``TORCHELASTIC_ERROR_FILE``). Before, torch's
excepthook buffered stderr around the plugin's hook, which ended the process inside that
call: every rank exited 1 with nothing written.

(The README's torchrun line as written trains and resumes:
tests/integration/test_sharded_pretraining.py.)
"""

import os
import shutil
import subprocess
import sys
import time

import pytest

from tests.helpers.runner import BIN, WARM, env
from tests.helpers.shards import shard_train_args
from tests.helpers.slurm import free_ports

TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2"]
SECONDS = 60  # two fairseq-train start-ups side by side on 2 shared cores (~10 s), the stop


def _refused(shards, save):
    """Every rank refuses the flag once its process group is up (building the criterion)."""
    return shards, shard_train_args(shards, save, 3, "--criterion", "dwa"), "--criterion dwa"


def _broken(shards, save):
    first, second = shards.split(":")
    bad = os.path.join(os.path.dirname(save), "bad")
    shutil.copytree(second, bad)
    shutil.rmtree(os.path.join(bad, "mono", "de"))
    return bad, shard_train_args(f"{first}:{bad}", save, 3), f"--mono-langs de: no {bad}/mono/de"


CASES = pytest.mark.parametrize("case", [_refused, _broken], ids=["refused-flag", "broken-shard"])


def _torchrun(args, timeout):
    """torchrun's agent forked from the test process's warm interpreter (its ranks start
    cold, as torchrun starts them): returncode, stdout and stderr."""
    port = free_ports(1)[0]
    cmd = [*TORCHRUN, "--master-port", str(port), os.path.join(BIN, "fairseq-train"), *args]
    agent = WARM.popen(cmd, env(), merge_stderr=False)
    if agent is None:
        return subprocess.run(cmd, capture_output=True, text=True, env=env(), timeout=timeout)
    out, err = (b.decode(errors="replace") for b in agent.communicate(timeout))
    return subprocess.CompletedProcess(cmd, agent.returncode, out, err)


def _srun_tasks(args):
    """Two processes with the variables srun gives two tasks on one node."""
    port = free_ports(1)[0]
    tasks = []
    for rank in range(2):
        slurm = dict(SLURM_JOB_ID=str(port), SLURM_STEP_ID="0", SLURM_JOB_NODELIST="localhost")
        slurm.update(SLURM_STEP_NODELIST="localhost", SLURM_NNODES="1", SLURM_NTASKS="2")
        slurm.update(SLURM_PROCID=str(rank), SLURM_LOCALID=str(rank), SLURM_NODEID="0")
        cmd = [os.path.join(BIN, "fairseq-train"), *args, "--distributed-port", str(port)]
        tasks.append(
            subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(**slurm)
            )
        )
    return tasks


def _assert_one_line(stderr: str, words: str):
    """``words``' line written once, by a rank (torchrun's summary aside)."""
    ours = [line for line in stderr.splitlines() if "fairseq-train: error:" in line]
    ours = [line for line in ours if "traceback :" not in line]  # torchrun's summary
    assert len(ours) == 1 and words in ours[0], stderr[-4000:]
    assert ours[0].startswith(("[rank0]: fairseq-train: error: ", "[rank1]: fairseq-")), ours
    assert "]: Traceback" not in stderr, stderr[-4000:]
    assert "Error in sys.excepthook" not in stderr, stderr[-4000:]
    # torchrun's own ChildFailedError is the only traceback left
    assert stderr.count("Traceback (most recent call last)") <= 1, stderr[-4000:]


@CASES
def test_under_torchrun_the_error_is_one_line_once_and_named_in_the_summary(case, shards, tmp_path):
    _, args, words = case(shards, str(tmp_path / "save"))
    start = time.monotonic()
    proc = _torchrun(args, timeout=SECONDS + 60)
    assert proc.returncode == 1 and time.monotonic() - start < SECONDS
    _assert_one_line(proc.stderr, words)
    summary = proc.stderr.split("Root Cause (first observed failure):")[1]
    assert "exitcode  : 1" in summary and words in summary, summary
    assert "error_file: <N/A>" not in summary


@CASES
def test_under_srun_the_error_is_one_line_once(case, shards, tmp_path):
    _, args, words = case(shards, str(tmp_path / "save"))
    start = time.monotonic()
    tasks = _srun_tasks(args)
    outputs = [t.communicate(timeout=SECONDS + 60) for t in tasks]
    assert [t.returncode for t in tasks] == [1, 1] and time.monotonic() - start < SECONDS
    stderr = "".join(err for _, err in outputs)
    _assert_one_line(stderr, words)
    assert "Traceback" not in stderr, stderr[-4000:]
