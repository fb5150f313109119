"""Output directories written through a hidden stage (veco_plugin.outputs.staged_dir)."""

import os
import signal
import socket
import subprocess
import sys

from veco_plugin.outputs import staged_dir

# a process that dies by SIGKILL while filling its stage, as an out-of-memory kill does
KILLED_WHILE_WRITING = """
import os, signal, sys
from veco_plugin.outputs import staged_dir
with staged_dir(sys.argv[1]) as stage:
    open(os.path.join(stage, "half.txt"), "w").write("half")
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _stages(out):
    return [f for f in os.listdir(os.path.dirname(out)) if f.startswith(".out.part-")]


def test_the_stage_of_a_killed_command_goes_with_the_next_write(tmp_path):
    out = str(tmp_path / "out")
    run = subprocess.run([sys.executable, "-c", KILLED_WHILE_WRITING, out])
    assert run.returncode == -signal.SIGKILL
    assert len(_stages(out)) == 1 and not os.path.exists(out)  # SIGKILL runs no cleanup
    with staged_dir(out) as stage:
        open(os.path.join(stage, "whole.txt"), "w").write("whole")
    assert _stages(out) == [] and os.listdir(out) == ["whole.txt"]


def test_a_running_commands_stage_is_left_alone(tmp_path):
    out = str(tmp_path / "out")
    with staged_dir(out) as mine:
        with staged_dir(str(tmp_path / "out")) as other:  # a second writer, this process
            assert os.path.isdir(mine) and mine != other
        assert os.path.isdir(mine)
    assert _stages(out) == []


def test_another_hosts_stage_is_left_alone(tmp_path):
    """Host ``H`` must not read the stage of host ``H-4194300`` (pid 4567 there) as its pid
    4194300, above this machine's pid_max."""
    out = str(tmp_path / "out")
    theirs = tmp_path / f".out.part-{socket.gethostname()}-4194300-4567-abcd_123"
    theirs.mkdir()
    with staged_dir(out) as stage:
        open(os.path.join(stage, "whole.txt"), "w").write("whole")
    assert theirs.is_dir()
