"""Running stamped stages: stamps, logs, the worker pool and Ctrl-C.

The runner of the quickstart, ``veco-xtreme`` and ``veco-derived-transfer``: each gives
its stages (:class:`Stage`), its name for error lines (``prog``) and how to start afresh
(``restart``); a refused or failed stage is a :class:`PipelineError`.

- A finished stage leaves ``RUN/stamps/<stage>.done``, JSON written atomically::

      {"command": ["fairseq-train", "RUN/data", ...], "seconds": 12.3,
       "finished": "2024-05-01T12:00:00+02:00"}

  A stage stamped with the same command is skipped; stamped with another (or an
  unreadable stamp) it is refused, so that a run directory never mixes settings.
- Every stage's output goes to ``RUN/logs/<stage>.log`` (appended; first the command as
  ``$ ...``) and to the console, each line prefixed ``[<stage>] ``, without the
  start-up noise of fairseq/hydra (:data:`NOISE`; the log keeps it).
- Pipelines (lists of stages) run side by side, each in a thread; a stage holds one of
  ``jobs`` slots while it runs, handed out first come, first served, so the pipelines
  started first (the pre-trainings) take the first slots.
- Python commands of this environment start forked from a warm interpreter
  (:mod:`.warm`: torch and fairseq imported once per run, not once per stage); others
  start cold, and the Python commands they start are warm (:mod:`.warm_path`). Each
  command starts in a session of its own; Ctrl-C or SIGTERM stops the process group
  of every running stage (its whole process tree), no stage starts after it, nothing
  is stamped, and a re-run resumes.
"""

from __future__ import annotations

import collections
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any, Callable, Deque, Dict, List, Mapping, Optional, Sequence, Set, Union

from .warm import WarmProcess, WarmStarts
from .warm_path import WarmPath

Process = Union["subprocess.Popen[bytes]", WarmProcess]

# Lines of fairseq/hydra start-up noise kept out of the console (they stay in RUN/logs).
NOISE = re.compile(
    r"deprecation_warning|UserWarning|FutureWarning|warnings\.warn|version_base"
    r"|compatability version|Will assume defaults|ConfigStore schema"
    r"|This behavior is deprecated|hydra\.cc|strict flag|real_initialize|exec\(cmd, globals"
    r"|torch\.cuda\.amp|^DEBUG:hydra|fairseq_cli\.(train|generate) \| \{"
    r"|fairseq_cli\.generate:\{|^ +(sys\.exit\(cli_main\(\)\)|super\(\)\.__init__\(loader\))$"
    r"|^\s*$"
)
KILL_GRACE_S = 10.0  # SIGTERM first; SIGKILL to a process group still there after this


class PipelineError(Exception):
    """A stage refused (finished earlier with another command) or failed, in one message:
    the command running the stages ends with ``PROG: error: MESSAGE``, exit status 1."""


class StageFailed(Exception):
    """A stage's command exited with ``status``."""

    def __init__(self, status: int) -> None:
        super().__init__(f"exit {status}")
        self.status = status


class Interrupted(Exception):
    """The run is stopping: no command may start."""


@dataclass
class Stage:
    """One stamped step. ``command`` is what the stamp holds and the log shows; with no
    ``body`` it is also what runs, else ``body(ctx)`` runs (commands via ``ctx.run``)."""

    name: str
    command: List[str]
    body: Optional[Callable[["StageContext"], None]] = None
    env: Mapping[str, str] = field(default_factory=dict)


# ----------------------------------------------------------------------------- stamps


def stamp_path(run: str, name: str) -> str:
    return os.path.join(run, "stamps", f"{name}.done")


def read_stamp(path: str) -> Optional[Dict[str, Any]]:
    """The stamp at ``path``; None if there is none, ``{}`` if it is not a JSON object
    (a stamp of the bash quickstart, or a damaged one)."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            stamp = json.load(f)
    except (OSError, ValueError):
        return {}
    return stamp if isinstance(stamp, dict) else {}


def write_stamp(path: str, command: Sequence[str], seconds: float) -> None:
    """Atomically: a reader sees the old stamp, none, or the whole new one."""
    stamp = {
        "command": list(command),
        "seconds": round(seconds, 2),
        "finished": datetime.now().astimezone().isoformat(timespec="seconds"),
    }
    with open(path + ".part", "w", encoding="utf-8") as f:
        json.dump(stamp, f, indent=1)
        f.write("\n")
    os.replace(path + ".part", path)


def is_done(run: str, stage: Stage, restart: str) -> bool:
    """True if ``stage`` finished with the same command; refused (:class:`PipelineError`,
    ending with ``restart``) if it finished with another; False if it never finished."""
    path = stamp_path(run, stage.name)
    stamp = read_stamp(path)
    if stamp is None:
        return False
    if stamp.get("command") == list(stage.command):
        return True
    raise PipelineError(
        f"stage {stage.name} finished earlier with other settings ({path}): {restart}"
    )


# ----------------------------------------------------------------------------- console


class Console:
    """The prefixed, filtered console that every stage thread writes to; its error lines
    are ``prog: error: ...``."""

    def __init__(
        self, prog: str, out: Optional[IO[str]] = None, err: Optional[IO[str]] = None
    ) -> None:
        """``out`` / ``err``: default the standard streams as they are now (a caller's
        ``contextlib.redirect_stdout`` included), not as they were at import."""
        self.out = sys.stdout if out is None else out
        self.err = sys.stderr if err is None else err
        self.prog = prog
        self._lock = threading.Lock()

    def say(self, line: str) -> None:
        with self._lock:
            self.out.write(line + "\n")
            self.out.flush()

    def error(self, message: str) -> None:
        with self._lock:
            self.out.flush()
            self.err.write(f"{self.prog}: error: {message}\n")
            self.err.flush()

    def stage_line(self, name: str, line: str) -> None:
        if not NOISE.search(line):
            self.say(f"[{name}] {line}")


class Slots:
    """``jobs`` slots, handed out in the order they were asked for."""

    def __init__(self, jobs: int) -> None:
        self.free = jobs
        self._waiting: Deque[object] = collections.deque()
        self._cond = threading.Condition()

    def acquire(self, stopping: threading.Event) -> None:
        ticket = object()
        with self._cond:
            self._waiting.append(ticket)
            try:
                while not stopping.is_set() and not (self._waiting[0] is ticket and self.free):
                    self._cond.wait(0.2)
            finally:
                self._waiting.remove(ticket)
                self._cond.notify_all()
            if stopping.is_set():
                raise Interrupted()
            self.free -= 1

    def release(self) -> None:
        with self._cond:
            self.free += 1
            self._cond.notify_all()


def kill_group(proc: Process, grace: float = KILL_GRACE_S) -> None:
    """SIGTERM to the process group of ``proc`` (started with ``start_new_session``),
    SIGKILL if it is still there after ``grace`` seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, grace)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        try:  # the leader is gone; anything left in its group gets the same signal
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break


# ----------------------------------------------------------------------------- running


class StageContext:
    """What a running stage writes with: its log, the console, commands to run."""

    def __init__(self, runner: "Runner", stage: Stage, log: IO[bytes]) -> None:
        self.runner, self.stage, self.log = runner, stage, log
        self.last_line = ""
        """the last non-blank line the stage wrote: a failed command's own error line."""

    def _line(self, line: str) -> None:
        if line.strip():
            self.last_line = line.strip()
        self.runner.console.stage_line(self.stage.name, line)

    def echo(self, text: str) -> None:
        for line in text.splitlines() or [""]:
            self.log.write(line.encode("utf-8", "replace") + b"\n")
            self.log.flush()
            self._line(line)

    def run(
        self, argv: Sequence[str], env: Optional[Mapping[str, str]] = None, show: bool = True
    ) -> None:
        """``argv`` in a session of its own, output to the log and the console (``show``:
        the command line first); a non-zero exit is :class:`StageFailed`."""
        if show:
            self.echo("$ " + " ".join(argv))
        self.last_line = ""  # the command's own lines, not the line that shows it
        proc = self.runner.start(argv, {**os.environ, **(env or {})})
        try:
            assert proc.stdout is not None
            for raw in iter(proc.stdout.readline, b""):
                self.log.write(raw)
                self.log.flush()
                self._line(raw.decode("utf-8", "replace").rstrip("\r\n"))
            status = proc.wait()
        except BaseException:
            kill_group(proc)
            raise
        finally:
            self.runner.forget(proc)
        if status != 0:
            raise StageFailed(status)


class Runner:
    """Runs stages of one run directory: skip/refuse by stamp, log, stamp; pipelines
    side by side on ``jobs`` slots; :meth:`stop` ends every running command. ``restart``
    ends a refusal: how the caller's command starts afresh."""

    def __init__(self, run: str, jobs: int, console: Console, restart: str) -> None:
        self.run_dir, self.jobs, self.restart = run, jobs, restart
        self.console = console
        self.stopping = threading.Event()
        self.slots = Slots(jobs)
        self.running = 0
        self.peak = 0  # most stages running at once (tests)
        self._procs: Set[Process] = set()
        self._lock = threading.Lock()
        self.warm = WarmStarts()
        self._warm_path: Optional[WarmPath] = None

    # -- processes
    def start(self, argv: Sequence[str], env: Mapping[str, str]) -> Process:
        """``argv`` in a session of its own, stdout and stderr on one pipe: warm if it
        can (:class:`~.warm.WarmStarts`), else cold."""
        with self._lock:  # stop() holds it too: nothing starts once it has begun
            if self.stopping.is_set():
                raise Interrupted()
            proc = self.warm.popen(argv, env) or subprocess.Popen(
                list(argv),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self._shims().env(env),
                start_new_session=True,
            )
            self._procs.add(proc)
        return proc

    def _shims(self) -> WarmPath:
        """The shims that start a cold command's own Python commands warm."""
        if self._warm_path is None:
            self._warm_path = WarmPath(self.warm)
        return self._warm_path

    def close(self) -> None:
        """End the warm interpreters (when the run has ended)."""
        if self._warm_path is not None:
            self._warm_path.close()
        self.warm.close()

    def forget(self, proc: Process) -> None:
        with self._lock:
            self._procs.discard(proc)

    def stop(self) -> None:
        """No command starts any more; every running one loses its process group."""
        with self._lock:
            self.stopping.set()
            procs = list(self._procs)
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for proc in procs:
            kill_group(proc)

    # -- stages
    def run_stage(self, stage: Stage, slot: bool = False) -> None:
        """Skip ``stage`` if stamped with its command, else run it (holding a slot if
        ``slot``) and stamp it. Raises :class:`PipelineError` (refused or failed)."""
        name = stage.name
        if is_done(self.run_dir, stage, self.restart):
            self.console.say(
                f"== [{name}] finished earlier: skipped ({stamp_path(self.run_dir, name)})"
            )
            return
        if slot:
            self.slots.acquire(self.stopping)
        log_path = os.path.join(self.run_dir, "logs", f"{name}.log")
        try:
            if self.stopping.is_set():
                raise Interrupted()
            with self._lock:
                self.running += 1
                self.peak = max(self.peak, self.running)
            self.console.say(f"== [{name}] {time.strftime('%H:%M:%S')} start (log: {log_path})")
            start = time.monotonic()
            with open(log_path, "ab") as log:
                ctx = StageContext(self, stage, log)
                status = self._execute(stage, ctx)
        finally:
            with self._lock:
                self.running = max(0, self.running - 1)
            if slot:
                self.slots.release()
        if status:  # the command's own error line last
            last = f"; its last line:\n{ctx.last_line}" if ctx.last_line else ""
            raise PipelineError(f"stage {name} failed (exit {status}; log: {log_path}){last}")
        seconds = time.monotonic() - start
        write_stamp(stamp_path(self.run_dir, name), stage.command, seconds)
        self.console.say(f"== [{name}] {time.strftime('%H:%M:%S')} done in {int(seconds)} s")

    def _execute(self, stage: Stage, ctx: StageContext) -> int:
        """The stage's exit status: its command's, or 1 for an error in its body."""
        try:
            if stage.body is None:
                ctx.run(stage.command, stage.env)
            else:
                ctx.echo("$ " + " ".join(stage.command))
                ctx.last_line = ""
                stage.body(ctx)
        except StageFailed as exc:
            return exc.status
        except (Interrupted, KeyboardInterrupt):
            raise
        except ValueError as exc:  # VecoUserError and friends: the message, no traceback
            ctx.echo(str(exc))
            return 1
        except Exception:
            ctx.echo(traceback.format_exc().rstrip())
            return 1
        return 0

    def run_pipeline(self, stages: Sequence[Stage], slot: bool = False) -> None:
        for stage in stages:
            self.run_stage(stage, slot=slot)

    def run_pipelines(self, pipelines: Sequence[Sequence[Stage]]) -> None:
        """One after the other with one job; else side by side, a thread each, at most
        ``jobs`` stages at a time. A failed pipeline says why and the others go on;
        raises :class:`PipelineError` once they have all ended."""
        if self.jobs == 1:
            for stages in pipelines:
                self.run_pipeline(stages)
            return
        failed: List[str] = []

        def work(stages: Sequence[Stage]) -> None:
            try:
                self.run_pipeline(stages, slot=True)
            except Interrupted:
                pass
            except PipelineError as exc:
                if not self.stopping.is_set():
                    self.console.error(str(exc))
                    failed.append(str(exc))

        threads = [
            threading.Thread(target=work, args=(stages,), daemon=True) for stages in pipelines
        ]
        for thread in threads:
            thread.start()
            time.sleep(0.05)  # the pipelines ask for slots in their order
        for thread in threads:
            while thread.is_alive():
                thread.join(0.2)
        if self.stopping.is_set():
            raise Interrupted()
        if failed:
            raise PipelineError(
                f"{len(failed)} pipeline(s) failed (see the [stage] lines above and "
                f"{self.run_dir}/logs); the last: {failed[-1]}"
            )


def interruptible(runner: Runner, work: Callable[[], int]) -> int:
    """``work()``'s exit status; on Ctrl-C or SIGTERM: stop every running stage, say so,
    and return 130 (a re-run resumes)."""
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for sig in previous:  # also when started in the background (SIGINT ignored)
        signal.signal(sig, signal.default_int_handler)
    try:
        return work()
    except (KeyboardInterrupt, Interrupted):
        for sig in previous:
            signal.signal(sig, signal.SIG_IGN)  # a second Ctrl-C must not cut the clean-up
        runner.console.err.write("== interrupted: stopping the running stages (re-run to resume)\n")
        runner.console.err.flush()
        runner.stop()
        return 130
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        runner.close()


def run_resumable(
    run: str, jobs: int, prog: str, work: Callable[[Runner], None], flag: str = "--out"
) -> int:
    """``work(runner)`` on a Runner of ``run`` (its logs/ and stamps/ made) whose refusals
    name ``prog`` and ``flag``; the exit status (130 after Ctrl-C, a re-run resumes)."""
    for sub in ("logs", "stamps"):
        os.makedirs(os.path.join(run, sub), exist_ok=True)
    runner = Runner(
        run,
        jobs,
        Console(prog=prog),
        restart=f"another {flag}, or remove that stamp to run {prog}'s stage again",
    )

    def body() -> int:
        work(runner)
        return 0

    return interruptible(runner, body)
