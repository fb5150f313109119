"""A command forked from a zygote (veco_plugin.pipeline.warm) starts as its own
interpreter would start it: the same argv, sys.path, environment, working directory,
session, stdin, root logger, exit status and last line; a fairseq console script writes
the same output; what a zygote cannot run is left to a cold start."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from tests.helpers.runner import REPO, env
from veco_plugin.pipeline.warm import CLOSE_GRACE_S, WarmStarts, _Zygote, entry

REPORT = [sys.executable, "-m", "tests.helpers.process_report"]


@pytest.fixture(scope="module")
def warm():
    starts = WarmStarts()
    yield starts
    starts.close()


def one(warm, mode, argv, environ, cwd):
    """``argv`` started ``mode`` ("cold": in a session of its own, as the runner starts
    it; "warm"): its (status, stdout, stderr)."""
    if mode == "cold":
        proc = subprocess.run(
            argv, env=environ, cwd=cwd, capture_output=True, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        return proc.returncode, proc.stdout, proc.stderr
    forked = warm.popen(argv, environ, merge_stderr=False, cwd=cwd)
    assert forked is not None, argv
    out, err = forked.communicate(120)
    return forked.returncode, out, err


def both(warm, argv, environ, cwd):
    return tuple(one(warm, mode, argv, environ, cwd) for mode in ("cold", "warm"))


def test_a_module_starts_as_its_interpreter_would_start_it(warm, tmp_path):
    """Also with a variable the interpreter reads when it starts: a zygote of its own."""
    environ = env(VECO_REPORT="a value", PYTHONPATH=REPO)
    cold, forked = both(warm, REPORT + ["exit", "3", "an argument"], environ, str(tmp_path))
    assert forked[0] == cold[0] == 3
    assert json.loads(forked[1]) == json.loads(cold[1])
    assert json.loads(forked[1])["cwd"] == str(tmp_path)
    assert forked[2] == cold[2] == b"stderr line\n"


def test_an_uncaught_exception_ends_as_in_its_interpreter(warm):
    cold, forked = both(warm, REPORT + ["raise"], env(), REPO)
    assert forked[0] == cold[0] == 1
    assert (
        forked[2].splitlines()[-1]
        == cold[2].splitlines()[-1]
        == (b"RuntimeError: raised at the top")
    )


def fairseq(script):
    return os.path.join(os.path.dirname(sys.executable), script)


def test_a_fairseq_console_script_writes_what_it_writes_cold(warm, tmp_path):
    """fairseq-preprocess logs as fairseq's import set it up (stderr); fairseq-train sets up
    its own logger before it imports fairseq (stdout, fairseq's format): each writes, warm,
    what it writes cold (timestamps and speeds aside), and the same dictionary."""
    (tmp_path / "train.txt").write_text("a b c\nb c d\nc d e a\n" * 8)
    stamp = re.compile(rb"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", re.M)
    preprocess = [fairseq("fairseq-preprocess"), "--only-source", "--trainpref", "train.txt",
                  "--validpref", "train.txt", "--destdir", "bin", "--workers", "1"]  # fmt: skip
    train = [fairseq("fairseq-train"), "bin", "--task", "language_modeling",
             "--arch", "transformer_lm", "--decoder-layers", "1", "--decoder-embed-dim", "8",
             "--decoder-ffn-embed-dim", "8", "--decoder-attention-heads", "1",
             "--tokens-per-sample", "8", "--max-tokens", "64", "--optimizer", "adam",
             "--lr", "1e-3", "--max-update", "1", "--no-save", "--cpu",
             "--log-format", "json", "--num-workers", "0"]  # fmt: skip
    runs = []
    for mode in ("cold", "warm"):
        cwd = tmp_path / mode
        cwd.mkdir()
        os.symlink(tmp_path / "train.txt", cwd / "train.txt")
        pre = one(warm, mode, preprocess, env(), str(cwd))
        runs.append((pre[0], stamp.sub(b"T", pre[1]), pre[2], (cwd / "bin/dict.txt").read_bytes()))
        status, out, err = one(warm, mode, train, env(), str(cwd))
        loggers = [sorted(set(re.findall(rb"\| INFO \| ([\w.]+) \|", o))) for o in (out, err)]
        runs.append((status, loggers, b"INFO:" in err))
    assert runs[2:] == runs[:2]
    assert b"T | INFO | fairseq_cli.preprocess" not in runs[0][1]  # stderr, hydra's format
    status, (on_stdout, on_stderr), default_format = runs[1]
    assert status == 0 and b"fairseq_cli.train" in on_stdout, runs[1]
    assert on_stderr == [] and not default_format, runs[1]


def test_its_process_group_is_its_own(warm):
    """What the runner's Ctrl-C does: a signal to the command's process group ends it
    (and nothing of the caller's), its status is that signal's."""
    proc = warm.popen(REPORT + ["sleep"], env())
    assert json.loads(proc.stdout.readline())["session_leader"]
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(30) == -signal.SIGTERM


def test_a_timeout_kills_it(warm):
    proc = warm.popen(REPORT + ["sleep"], env(), merge_stderr=False)
    start = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        proc.communicate(timeout=2)
    assert proc.returncode == -signal.SIGKILL and time.monotonic() - start < 30


@pytest.mark.parametrize(
    "argv",
    [["bash", "-c", "true"], [sys.executable, "-c", "print(1)"], [sys.executable, "-X", "dev"]],
)
def test_what_only_an_interpreter_runs_is_left_to_a_cold_start(argv):
    assert entry(argv, env()) is None


def test_closing_a_zygote_that_still_imports_ends_it_at_once():
    """A pipeline stopped by Ctrl-C closes its zygotes; one still importing torch and
    fairseq (seconds) is killed, where the close waited up to 10 s for it (9.1 s here)."""
    zygote = _Zygote("fairseq", env())
    started = time.monotonic()
    zygote.close()
    assert time.monotonic() - started < CLOSE_GRACE_S + 2 and zygote.proc.returncode is not None
