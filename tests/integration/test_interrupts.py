"""Ctrl-C wherever it lands in ``fairseq-train`` (veco_plugin.checkpoints.interrupts): the
one line ``fairseq-train: interrupted; resume with the same command``, the exit of a
process ended by SIGINT, no traceback, no ``.tmp``, only complete checkpoints; the same
command resumes and ends where an uninterrupted run ends.

The signal goes to the run's whole process group (as a terminal sends it) at named points
(tests/helpers/interrupt_at.py), never after a delay: the tests do not depend on timing."""

import glob
import os
import signal
import subprocess
import sys

import pytest

from tests.helpers.runner import REPO, WARM, env, pretrain_args, run
from veco_plugin.checkpoints.atomic import is_complete
from veco_plugin.checkpoints.trusted_load import load_trusted

UPDATES = 4
LINE = "fairseq-train: interrupted; resume with the same command"
FINISHING = "fairseq-train: interrupted: finishing the checkpoint save, then stopping"


def _args(data, save, criterion, workers):
    return pretrain_args(
        data, save, criterion, UPDATES, "--save-interval-updates", "2",
        "--validate-interval-updates", "2", "--max-valid-steps", "2", "--num-workers", workers,
        "--log-interval", "1",
    )  # fmt: skip


def interrupted(point, args):
    """fairseq-train ``args`` stopped at ``point``: (status, stderr)."""
    argv = [sys.executable, "-m", "tests.helpers.interrupt_at", point, "--", *map(str, args)]
    proc = WARM.popen(argv, env(), merge_stderr=False, cwd=REPO)
    if proc is None:  # no zygote: a cold start in a session of its own
        done = subprocess.run(argv, env=env(), cwd=REPO, capture_output=True,
                              start_new_session=True, timeout=300)  # fmt: skip
        return done.returncode, done.stderr.decode(errors="replace")
    _, err = proc.communicate(300)
    return proc.returncode, err.decode(errors="replace")


def assert_stopped_cleanly(status, err, save):
    assert status == -signal.SIGINT, (status, err[-3000:])
    assert "Traceback" not in err and "exited unexpectedly" not in err, err[-3000:]
    assert err.strip().splitlines()[-1] == LINE, err[-3000:]
    assert not glob.glob(str(save / "*.tmp")), os.listdir(save)
    for path in glob.glob(str(save / "checkpoint*.pt")):
        assert is_complete(path), path


def _updates(path) -> int:
    return load_trusted(path)["optimizer_history"][-1]["num_updates"]


CASES = [  # (point, criterion, DataLoader workers, resumed here)
    ("step", "ca_mlm", 2, True),
    ("worker", "ca_mlm", 2, False),
    ("valid", "ca_mlm", 0, False),
    ("write", "ca_mlm", 2, False),
    ("rename", "ca_mlm", 0, False),
    ("copy", "ca_mlm", 0, False),
    ("twice", "ca_mlm", 0, True),
    ("step", "dwa", 0, False),
    ("write", "dwa", 2, True),
]


@pytest.mark.parametrize("point, criterion, workers, resume", CASES)
def test_a_ctrl_c_ends_in_one_line_and_the_run_resumes(
    pretrain_data, tmp_path, point, criterion, workers, resume
):
    save = tmp_path / "ck"
    args = _args(pretrain_data, save, criterion, workers)
    status, err = interrupted(point, args)
    assert_stopped_cleanly(status, err, save)
    in_save = point in ("write", "rename", "copy", "twice")
    assert (FINISHING in err) == in_save, err[-3000:]
    if point == "twice":  # the second Ctrl-C cut the save: nothing of it is left
        assert not glob.glob(str(save / "checkpoint_*_*.pt")), os.listdir(save)
    elif in_save:  # the save that was in progress is whole
        assert _updates(save / "checkpoint_1_2.pt") == 2
    if not resume:
        return
    (save / "checkpoint_9_99.pt.tmp").write_bytes(b"PK cut short")  # a harder kill's leftover
    out = run("fairseq-train", args)
    assert "removing " + str(save / "checkpoint_9_99.pt.tmp") in out.stdout + out.stderr
    assert _updates(save / "checkpoint_last.pt") == UPDATES
    assert not glob.glob(str(save / "*.tmp"))


def from_a_terminal() -> None:
    """A terminal's child takes Ctrl-C (pytest-xdist's workers ignore SIGINT, and a
    child inherits that: its interpreter would never raise KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


# Imported first by the interpreter (PYTHONPATH): a Ctrl-C while fairseq imports its
# criterions, seconds before --user-dir imports the plugin.
AT_IMPORT = """import os, signal, sys
class AtImport:
    def find_spec(self, name, path=None, target=None):
        if name == "fairseq.criterions":
            sys.meta_path.remove(self)
            os.killpg(0, signal.SIGINT)
sys.meta_path.insert(0, AtImport())
"""


def test_a_ctrl_c_before_the_plugin_is_imported_is_the_same_line(tmp_path):
    """fairseq-train's first seconds (cold: torch and fairseq importing) end in the same
    line (veco_plugin_startup.pth), where they printed a KeyboardInterrupt traceback."""
    (tmp_path / "sitecustomize.py").write_text(AT_IMPORT)
    command = [os.path.join(os.path.dirname(sys.executable), "fairseq-train"), "--help"]
    done = subprocess.run(
        command, env=env(PYTHONPATH=str(tmp_path)), capture_output=True,
        start_new_session=True, timeout=300, preexec_fn=from_a_terminal,
    )  # fmt: skip
    err = done.stderr.decode(errors="replace")
    assert done.returncode == -signal.SIGINT and err == LINE + "\n", (done.returncode, err)


def test_torchruns_own_signal_traceback_is_the_same_line(tmp_path):
    """torchrun's agent ends a Ctrl-C in torch's SignalException (after its ranks said
    their line): the same one line, and the exit of a process ended by that signal."""
    script = tmp_path / "torchrun-agent"  # a torchrun* program, as the hook sees it
    script.write_text(
        f"#!{sys.executable}\n"
        "import signal\n"
        "from torch.distributed.elastic.multiprocessing.api import SignalException\n"
        "raise SignalException('Process 1 got signal: 2', sigval=signal.SIGINT)\n"
    )
    script.chmod(0o755)
    done = subprocess.run(
        [str(script)], env=env(), capture_output=True, timeout=300, preexec_fn=from_a_terminal
    )
    err = done.stderr.decode(errors="replace")
    assert done.returncode == -signal.SIGINT, (done.returncode, err)
    assert err == "torchrun-agent: interrupted; resume with the same command\n", err
