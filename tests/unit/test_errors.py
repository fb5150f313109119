"""The one-line ending of a command (veco_plugin.errors) while a daemon thread is inside torch,
as fairseq's BufferedIterator is while training: still one line and the usual exit status
(was: ``terminate called without an active exception`` and SIGABRT at finalization)."""

import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

SCRIPT = textwrap.dedent("""
    import threading, time
    import torch
    import veco_plugin  # installs the hook
    from veco_plugin.errors import VecoUserError

    a = torch.randn(200, 200)

    def collate_forever():
        while True:
            torch.mm(a, a).sum()

    threading.Thread(target=collate_forever, daemon=True).start()
    time.sleep(0.2)
    raise {raised}
    """)


@pytest.mark.parametrize(
    "raised, line, returncode",
    [
        ('VecoUserError("--flag x: pass y")', "-c: error: --flag x: pass y", 1),
        ("KeyboardInterrupt", "-c: interrupted; resume with the same command", -signal.SIGINT),
    ],
)
def test_ending_beside_a_busy_daemon_thread_is_one_line(raised, line, returncode):
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(raised=raised)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stderr.splitlines() == [line], proc.stderr
    assert proc.returncode == returncode


def test_other_exceptions_keep_their_traceback_and_status():
    proc = subprocess.run(
        [sys.executable, "-c", "import veco_plugin\n1 / 0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" in proc.stderr and proc.stderr.splitlines()[-1].startswith(
        "ZeroDivisionError"
    )
    assert proc.returncode == 1


def test_the_excepthook_is_installed_before_torch_and_fairseq_load():
    """A Ctrl-C while torch and fairseq import (seconds, at every command's start) reaches
    the one-line hook: the plugin installs it before it imports either."""
    guard = textwrap.dedent("""
        import builtins, sys
        original = builtins.__import__
        def guarded(name, *args, **kwargs):
            if name.split(".")[0] in ("torch", "fairseq") and sys.excepthook is sys.__excepthook__:
                raise SystemExit(f"{name} imported before the plugin's excepthook")
            return original(name, *args, **kwargs)
        builtins.__import__ = guarded
        import veco_plugin
        """)
    proc = subprocess.run([sys.executable, "-c", guard], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_rank_left_in_a_collective_ends_in_one_line_within_seconds():
    """Rank 0 refuses a flag after the process group started (torch's excepthook wraps
    the plugin's); rank 1, waiting for it in an all-reduce, ends too, in one line."""
    port, start = _free_port(), time.monotonic()
    ranks = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2")
        env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        cmd = [sys.executable, "-m", "tests.helpers.launch_failure"]
        ranks.append(subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env))
    errors = [p.communicate(timeout=120)[1] for p in ranks]
    assert [p.returncode for p in ranks] == [1, 1] and time.monotonic() - start < 60
    assert errors[0] == "[rank0]: launch_failure.py: error: --flag x: only rank 0 refuses it\n"
    [line] = errors[1].splitlines()
    assert line.startswith("[rank1]: launch_failure.py: stopped: another process of this job")
    # gloo's reason: "closed" when the peer's exit is seen first, "reset" when a read fails
    # (seen on a loaded machine)
    assert re.search(r"\(.*Connection (closed|reset) by peer", line), line


def test_a_spawned_childs_user_error_is_its_line():
    """fairseq's launch on GPU nodes: the child's VecoUserError reaches the parent inside
    torch's ProcessRaisedException, and is written as the child's one line."""
    cmd = [sys.executable, "-m", "tests.helpers.launch_failure", "spawn"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    line = "launch_failure.py: error: [rank1] --flag x: only rank 1 refuses it"
    assert proc.stderr.splitlines()[-1] == line and "Traceback" not in proc.stderr
