"""Two CPU ranks (gloo, legacy_ddp, tcp:// init) == one process on the same global batch."""

import contextlib
import os
import signal
import socket
import subprocess

from tests.helpers.runner import BIN, json_logs, run, start
from tests.helpers.shards import lockstep_args


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _args(data, save, *extra):
    return lockstep_args(data, save, 6, *extra)


def test_two_ranks_match_one_process(pretrain_data, tmp_path):
    single = run("fairseq-train", _args(pretrain_data, tmp_path / "one", "--update-freq", "2"))
    port = _free_port()
    ranks = [
        start(
            [os.path.join(BIN, "fairseq-train"), *_args(
                pretrain_data, tmp_path / "two", "--distributed-world-size", "2",
                "--distributed-rank", str(rank), "--distributed-backend", "gloo",
                "--ddp-backend", "legacy_ddp", "--distributed-init-method",
                f"tcp://127.0.0.1:{port}", "--distributed-no-spawn",
            )]  # fmt: skip
        )
        for rank in range(2)
    ]
    outputs = []
    for proc in ranks:
        try:
            outputs.append(proc.communicate(timeout=300)[0].decode(errors="replace"))
        except subprocess.TimeoutExpired:
            for p in ranks:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
            raise AssertionError("2-rank fairseq-train hung")
        assert proc.returncode == 0, outputs[-1][-3000:]

    one = json_logs(single.stdout + single.stderr)
    two = json_logs(outputs[0])
    assert len(one) == len(two) == 6
    for a, b in zip(one, two):
        assert b["num_updates"] == a["num_updates"]
        assert abs(a["loss"] - b["loss"]) < 1e-3 * a["loss"], (a["loss"], b["loss"])
        assert abs(a["bi_x_ca_loss"] - b["bi_x_ca_loss"]) < 1e-3 * a["bi_x_ca_loss"]
    assert (tmp_path / "two" / "checkpoint_last.pt").exists()
