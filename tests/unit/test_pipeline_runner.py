"""The stamped-stage runner (``veco_plugin.pipeline.runner``, set up as the quickstart
does): JSON stamps (skip, refuse, resume), logs and the prefixed console, the bound on
stages at once, and Ctrl-C stopping whole process trees."""

import io
import os
import signal
import threading
import time

import pytest

from veco_plugin.pipeline.runner import (
    Console,
    PipelineError,
    Runner,
    Stage,
    interruptible,
    read_stamp,
    stamp_path,
    write_stamp,
)
from veco_plugin.quickstart.options import PROG, RESTART


def _runner(tmp_path, jobs=1):
    for sub in ("stamps", "logs"):
        (tmp_path / sub).mkdir(exist_ok=True)
    out, err = io.StringIO(), io.StringIO()
    return Runner(str(tmp_path), jobs, Console(PROG, out, err), RESTART), out, err


def _sh(name, script):
    return Stage(name, ["sh", "-c", script])


def test_stamp_is_json_with_the_command_written_atomically(tmp_path):
    path = str(tmp_path / "x.done")
    write_stamp(path, ["fairseq-train", "a b"], 1.234)
    stamp = read_stamp(path)
    assert stamp["command"] == ["fairseq-train", "a b"] and stamp["seconds"] == 1.23
    assert "T" in stamp["finished"] and os.listdir(tmp_path) == ["x.done"]
    assert read_stamp(str(tmp_path / "none.done")) is None
    (tmp_path / "old.done").write_text("config=0123\nseconds=3\n")  # the bash quickstart's
    assert read_stamp(str(tmp_path / "old.done")) == {}


def test_run_log_console_stamp_then_skip_then_refuse(tmp_path):
    runner, out, _ = _runner(tmp_path)
    stage = _sh("s", 'echo hello; echo x User"Warning": y >&2; echo; exit 0')
    runner.run_stage(stage)
    console = out.getvalue()
    assert "== [s] " in console and " start (log: " in console and " done in 0 s" in console
    assert "[s] $ sh -c echo hello;" in console and "[s] hello\n" in console
    assert "UserWarning" not in console  # the noise stays in the log
    log = (tmp_path / "logs" / "s.log").read_text().splitlines()
    assert log[0] == "$ " + " ".join(stage.command) and "x UserWarning: y" in log
    assert read_stamp(stamp_path(str(tmp_path), "s"))["command"] == stage.command

    runner.run_stage(stage)  # the same command: skipped
    assert f"== [s] finished earlier: skipped ({tmp_path}/stamps/s.done)" in out.getvalue()
    with pytest.raises(PipelineError) as info:  # another command: refused
        runner.run_stage(_sh("s", "echo other"))
    assert str(info.value) == (
        f"stage s finished earlier with other settings ({tmp_path}/stamps/s.done): --force "
        "to start afresh, or another --run-dir"
    )


def test_failed_stage_is_not_stamped_and_a_body_error_is_one_line(tmp_path):
    runner, out, _ = _runner(tmp_path)
    with pytest.raises(PipelineError, match=r"^stage bad failed \(exit 3; log: .*bad\.log\)$"):
        runner.run_stage(_sh("bad", "exit 3"))
    assert not os.path.exists(stamp_path(str(tmp_path), "bad"))

    def body(ctx):
        ctx.echo("working")
        raise ValueError("missing or empty: /x/train.en")

    with pytest.raises(PipelineError, match=r"stage fn failed \(exit 1;"):
        runner.run_stage(Stage("fn", ["make_text", "a"], body))
    assert "[fn] missing or empty: /x/train.en" in out.getvalue()
    assert (tmp_path / "logs" / "fn.log").read_text().splitlines()[:2] == [
        "$ make_text a",
        "working",
    ]


def test_pool_runs_at_most_jobs_stages_first_pipelines_first(tmp_path):
    runner, out, _ = _runner(tmp_path, jobs=2)
    pipelines = [[_sh(f"p{i}-{j}", "sleep 0.3") for j in range(2)] for i in range(3)]
    runner.run_pipelines(pipelines)
    assert runner.peak == 2
    started = [line.split("]")[0][4:] for line in out.getvalue().splitlines() if " start " in line]
    assert set(started[:2]) == {"p0-0", "p1-0"} and len(started) == 6
    for stages in pipelines:
        for stage in stages:
            assert os.path.isfile(stamp_path(str(tmp_path), stage.name))
    (tmp_path / "one").mkdir()
    sequential, _, _ = _runner(tmp_path / "one", jobs=1)
    sequential.run_pipelines([[_sh("a", "true")], [_sh("b", "true")]])
    assert sequential.peak == 1


def test_a_failed_pipeline_lets_the_others_finish(tmp_path):
    runner, _, err = _runner(tmp_path, jobs=2)
    with pytest.raises(PipelineError, match="1 pipeline.s. failed") as failed:
        runner.run_pipelines(
            [[_sh("bad", "echo why >&2; exit 2"), _sh("never", "true")], [_sh("ok", "true")]]
        )
    assert "quickstart: error: stage bad failed (exit 2;" in err.getvalue()
    assert str(failed.value).splitlines()[-1] == "why"
    assert os.path.isfile(stamp_path(str(tmp_path), "ok"))
    assert not os.path.exists(stamp_path(str(tmp_path), "never"))


def test_a_failed_stage_ends_on_its_commands_own_error_line(tmp_path):
    """The usage text a command prints first, its error line last: the error the user
    reads last is the command's own line, not only 'stage ... failed'."""
    runner, _, _ = _runner(tmp_path)
    script = "echo 'usage: tool [-h]' >&2; echo 'tool: error: unrecognized arguments: --x' >&2; "
    with pytest.raises(PipelineError) as failed:
        runner.run_stage(_sh("bad", script + "echo >&2; exit 2"))
    lines = str(failed.value).splitlines()
    assert lines[0].startswith("stage bad failed (exit 2; log: ")
    assert lines[-1] == "tool: error: unrecognized arguments: --x"


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_stops_every_process_tree_and_a_rerun_resumes(tmp_path, sig):
    """Two pipelines side by side, each stage starting a grandchild that sleeps (unless
    RUN/go exists: then it finishes at once, the re-run)."""

    def stage(name):
        script = (
            f"test -e {tmp_path}/go && exit 0; sleep 300 & echo $! > {tmp_path}/{name}.pid; wait"
        )
        return Stage(name, ["sh", "-c", script])

    def pipelines(runner):
        def work():
            runner.run_pipelines([[stage("a"), stage("a2")], [stage("b")]])
            return 0

        return work

    def interrupt_when_running():
        deadline = time.time() + 30
        while not all((tmp_path / f"{n}.pid").is_file() for n in "ab"):
            if time.time() > deadline:
                break
            time.sleep(0.05)
        time.sleep(0.2)
        os.kill(os.getpid(), sig)

    runner, out, err = _runner(tmp_path, jobs=2)
    threading.Thread(target=interrupt_when_running, daemon=True).start()
    assert interruptible(runner, pipelines(runner)) == 130
    assert "== interrupted: stopping the running stages (re-run to resume)" in err.getvalue()
    grandchildren = [int((tmp_path / f"{n}.pid").read_text()) for n in "ab"]
    deadline = time.time() + 10
    while any(_alive(pid) for pid in grandchildren) and time.time() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in grandchildren)
    assert "a2" not in out.getvalue()  # nothing started after the interrupt
    assert os.listdir(tmp_path / "stamps") == []  # nothing stamped

    (tmp_path / "go").touch()  # the re-run: the same commands, which now finish
    runner, _, _ = _runner(tmp_path, jobs=2)
    assert interruptible(runner, pipelines(runner)) == 0
    assert sorted(os.listdir(tmp_path / "stamps")) == ["a.done", "a2.done", "b.done"]


def test_the_console_writes_to_the_streams_of_its_time(tmp_path):
    """A runner built under ``redirect_stdout`` / ``redirect_stderr`` (a program that runs
    a pipeline through a command's entry point) writes there: the default streams were
    bound when the module was imported, and the stage lines went to the terminal."""
    import contextlib

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        console = Console(PROG)
    console.say("== [s] done")
    console.error("refused")
    assert out.getvalue() == "== [s] done\n" and err.getvalue() == f"{PROG}: error: refused\n"
