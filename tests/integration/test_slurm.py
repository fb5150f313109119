"""Pre-training launched by a real Slurm on CPU: ``srun --nodes 1 --ntasks 2
fairseq-train DATA/shard0:DATA/shard1 ...`` is one 2-rank job.

The cluster is this machine alone: munged, slurmctld and slurmd of Debian's
``slurm-wlm`` under a temp dir (``tests/helpers/slurm.py``; ready in about 1.5 s, gone
when the module ends, however it ends). Machines without those daemons, or tests not
run as root, skip this module; to run it::

    sudo apt-get install -y slurm-wlm munge

The shards and arguments are those of ``test_sharded_pretraining.py`` (dropout off),
so the job's losses are those of one process with ``--update-freq 2``.
"""

import os
import subprocess

import pytest

from tests.helpers import slurm
from tests.helpers.runner import BIN, env, run
from tests.helpers.shards import assert_same_losses, losses, shard_train_args
from veco_plugin.distributed.launch import slurm_port

pytestmark = pytest.mark.skipif(slurm.missing() is not None, reason=str(slurm.missing()))

UPDATES = 3


@pytest.fixture(scope="module")
def port() -> int:
    """A free port that the plugin derives from a job id (the cluster's first)."""
    port = 0
    while not 10000 < port < 60000:
        [port] = slurm.free_ports(1)
    assert slurm_port({"SLURM_JOB_ID": str(port - 10000)}) == port
    return port


@pytest.fixture(scope="module")
def cluster(port, tmp_path_factory):
    """The environment of srun on a one-node cluster whose first job derives ``port``."""
    with slurm.cluster(tmp_path_factory.mktemp("slurm"), first_job_id=port - 10000) as conf:
        yield slurm.client_env(env(), conf)


def test_srun_two_tasks_are_one_job(shards, cluster, port, tmp_path):
    """srun's two tasks join one gloo world at the job's port; the losses are one
    process's with two batches per update."""
    args = shard_train_args(shards, tmp_path / "srun", UPDATES, "--ddp-backend", "legacy_ddp")
    srun = subprocess.run(
        [slurm.program("srun"), "--nodes", "1", "--ntasks", "2", "--kill-on-bad-exit=1"]
        + ["--time", "5", "--output", f"{tmp_path}/rank%t.log"]
        + [os.path.join(BIN, "fairseq-train"), *map(str, args)],
        capture_output=True,
        text=True,
        env=cluster,
        cwd=tmp_path,
        timeout=300,
    )
    logs = [tmp_path / f"rank{r}.log" for r in range(2)]
    ranks = [log.read_text() if log.exists() else "" for log in logs]
    assert srun.returncode == 0, srun.stderr[-2000:] + ranks[0][-3000:] + ranks[1][-3000:]
    for r in range(2):
        assert f"srun: rank {r} of 2 (tcp://localhost:{port})" in ranks[r]

    one = run(
        "fairseq-train", shard_train_args(shards, tmp_path / "one", UPDATES, "--update-freq", "2")
    )
    assert_same_losses(losses(ranks[0]), losses(one.stdout), range(1, UPDATES + 1))
