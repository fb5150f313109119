"""A shell script's Python commands, started through the shims of
veco_plugin.pipeline.warm_path, run forked from a zygote and behave as they do cold:
argv, sys.path, cwd, stdin, ``__main__``, output and exit status; a signal to the
script's process group reaches them; what a zygote cannot run starts cold; a pipeline run
under the shims forks its commands from their zygotes."""

import json
import os
import signal
import subprocess
import sys
import time

from tests.helpers.runner import REPO, WARM, WARM_PATH, env
from veco_plugin.pipeline.warm import BROKER_ENV, WarmStarts
from veco_plugin.pipeline.warm_path import WarmPath

REPORT = os.path.join(REPO, "tests", "helpers", "process_report.py")


def _shell(script, warm, **kw):
    environ = env(PYTHON=sys.executable, PYTHONPATH=REPO, VECO_REPORT="x")
    if not warm:  # the same environment without the shims
        environ["PATH"] = environ["PATH"].split(os.pathsep, 1)[1]
        environ["PYTHON"] = sys.executable
    return subprocess.run(["bash", "-c", script], env=environ, capture_output=True, **kw)


def _started(proc):
    report = json.loads(proc.stdout.splitlines()[0])
    report.pop("session_leader")  # warm: a session of its own (signals are passed on)
    return report


def test_a_script_run_by_python_starts_as_it_starts_cold(tmp_path):
    line = f'echo input | "$PYTHON" {REPORT} exit 3 an-argument'
    cold, warm = (_shell(line, w, cwd=tmp_path) for w in (False, True))
    assert warm.returncode == cold.returncode == 3
    assert _started(warm) == _started(cold)
    assert _started(warm)["stdin"] == "input\n" and _started(warm)["main"] == "__main__"
    assert warm.stderr == cold.stderr == b"stderr line\n"


def test_console_scripts_and_modules_write_what_they_write_cold():
    line = "fairseq-preprocess --help | head -3; python -m veco_plugin.cli.wmt14 --help"
    cold, warm = (_shell(line, w) for w in (False, True))
    assert warm.returncode == cold.returncode == 0
    assert warm.stdout == cold.stdout and b"usage: fairseq-preprocess" in warm.stdout


def test_what_a_zygote_cannot_run_starts_cold():
    proc = _shell("python -c 'import sys; print(sys.argv)'; python3 -V", warm=True)
    assert proc.returncode == 0 and proc.stdout.decode().startswith("['-c']\nPython 3.")


def test_a_signal_to_the_scripts_group_ends_the_command():
    environ = env(PYTHON=sys.executable, PYTHONPATH=REPO)
    assert environ["PATH"].startswith(WARM_PATH.dir)
    proc = subprocess.Popen(
        ["bash", "-c", f'"$PYTHON" {REPORT} sleep; echo "ended: $?"'],
        env=environ, stdout=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    assert proc.stdout is not None
    json.loads(proc.stdout.readline())  # it runs
    started = time.monotonic()
    os.killpg(proc.pid, signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert time.monotonic() - started < 10  # not the 60 s it sleeps
    # bash waits for the shim, which ends by the signal that ended the command
    assert proc.returncode == -signal.SIGTERM or out == b"ended: 143\n", (proc.returncode, out)


def test_a_killed_shim_takes_its_command_with_it():
    """kill -9 reaches the shim only: the broker sees it go and kills the command, whose
    end closes the output pipe it shared (it would sleep 60 s)."""
    proc = subprocess.Popen(
        ["bash", "-c", f'exec "$PYTHON" {REPORT} sleep'],
        env=env(PYTHON=sys.executable, PYTHONPATH=REPO), stdout=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    json.loads(proc.stdout.readline())  # it runs
    started = time.monotonic()
    proc.kill()
    assert proc.stdout.read() == b"" and time.monotonic() - started < 10
    proc.wait()


def test_nested_shims_find_the_real_command():
    """A pipeline started from a shell stage of another puts its own shims before the
    first ones: each shim looks past every shim (was: they exec'd each other forever)."""
    inner = WarmPath(WARM_PATH.warm)
    try:
        environ = inner.env(env())
        proc = subprocess.run(
            ["bash", "-c", "veco-average-checkpoints --help | head -1"],
            env=environ, capture_output=True, timeout=120,
        )  # fmt: skip
    finally:
        inner.close()
    assert proc.returncode == 0 and proc.stdout.startswith(b"usage: veco-average-checkpoints")


def test_a_pipeline_run_under_shims_forks_from_their_zygotes():
    """The pipeline a test or a shell stage runs (its environment names the shims' broker)
    starts no zygote of its own: the broker forks its commands; once that broker is gone,
    the pipeline starts its own."""
    pipeline = WarmStarts()
    try:
        argv = [sys.executable, REPORT, "exit", "4"]
        environ = env(PYTHONPATH=REPO, VECO_REPORT="x")
        assert environ[BROKER_ENV] == WARM_PATH.address[1:]
        proc = pipeline.popen(argv, environ, merge_stderr=False)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 4 and json.loads(out.splitlines()[0])["env"] == "x"
        assert err == b"stderr line\n" and not pipeline._zygotes
        gone = WarmPath(WARM)
        gone.close()
        proc = pipeline.popen(argv, {**environ, BROKER_ENV: gone.address[1:]})
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 4 and pipeline._zygotes, (proc.returncode, out, err)
    finally:
        pipeline.close()
