"""One error type for user mistakes, ending every command line in one line.

Raised anywhere in the plugin, also deep inside ``fairseq-train`` / ``fairseq-generate``
(tasks, models, criteria, datasets), a ``VecoUserError`` ends the process with
``PROG: error: MESSAGE`` and exit status 1, no traceback; Ctrl-C ends with
``PROG: interrupted; resume with the same command``. Any other exception keeps its
full traceback: real bugs stay visible.

After the hook has written, the process ends at once (standard streams flushed, ``atexit``
handlers run), without the interpreter's finalization: fairseq collates the next batches in
a daemon thread (``BufferedIterator``), and finalizing while that thread is inside torch
aborts the process with a second line, ``terminate called without an active exception``.

In a job that a launcher started as one process per rank (torchrun: ``RANK`` and
``WORLD_SIZE``; srun: ``SLURM_PROCID`` and ``SLURM_NTASKS``):

* every line written starts with ``[rankN]: `` (the rank that raised it), as torch's own
  excepthook writes them once a process group exists: that hook (installed by
  ``init_process_group``) buffers ``sys.stderr`` around the hook it replaced, ours, and
  prints the buffer after it returns, so the process ends after torch's hook has written
  (:func:`end_after_outer_hook`), never inside it;
* a ``VecoUserError`` that every rank raises alike (a refused flag, a broken shard) is
  written once on each machine, by the first rank to reach it;
* a rank whose collective broke because another process ended writes one line saying so;
* torchrun's summary names the error: the line (or the traceback) goes to the file
  ``TORCHELASTIC_ERROR_FILE`` names, in torchelastic's format.

Under fairseq's own ``spawn`` (one process per GPU), a child's ``VecoUserError`` reaches
the parent inside torch's ``ProcessRaisedException``: it is written as the child's line.
"""

import atexit
import hashlib
import io
import json
import os
import re
import signal
import sys
import tempfile
import time
from typing import Optional

from .patching import wrap_once

ONE_LINE = "one_line"
ENDING = "ends_after_outer_hook"
# a collective whose peer process ended (gloo's and NCCL's words for it)
PEER_LOST = re.compile(
    r"Connection (closed|reset) by peer|Broken pipe|Socket Timeout|NCCL communicator was aborted"
    r"|remote process exited|peer .* (closed|disconnected)",
    re.IGNORECASE,
)
SPAWNED_USER_ERROR = "veco_plugin.errors.VecoUserError: "


class VecoUserError(ValueError):
    """A mistake in the user's files, flags or data; the message names the file or
    flag and the fix."""


def launched_rank() -> Optional[int]:
    """This process's rank in a job a launcher started as several processes (torchrun,
    srun); None for a process on its own."""
    env = os.environ
    if int(env.get("WORLD_SIZE", "1")) > 1 and "RANK" in env:
        return int(env["RANK"])
    if int(env.get("SLURM_NTASKS", "1")) > 1 and "SLURM_PROCID" in env:
        return int(env["SLURM_PROCID"])
    return None


def _job() -> str:
    """What this launch's processes on one machine share and no other launch does:
    srun's job and step; torchrun's agent (the workers' parent process) and rendezvous."""
    env = os.environ
    if "SLURM_JOB_ID" in env and "SLURM_PROCID" in env:
        return f"srun-{env['SLURM_JOB_ID']}.{env.get('SLURM_STEP_ID', '0')}"
    parts = (env.get("MASTER_ADDR"), env.get("MASTER_PORT"), env.get("TORCHELASTIC_RUN_ID"))
    return f"torchrun-{os.getppid()}-" + "-".join(str(p) for p in parts)


def first_to_write(line: str) -> bool:
    """True for the first process of this launch (on this machine) to report ``line``:
    a marker file created exclusively, named by the launch and the line."""
    folder = os.path.join(tempfile.gettempdir(), "veco-job-errors", _job())
    name = hashlib.sha1(line.encode("utf-8")).hexdigest()
    try:
        os.makedirs(folder, exist_ok=True)
        os.close(os.open(os.path.join(folder, name), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    except OSError:  # no writable temp dir: every rank writes
        return True
    return True


def _broken_collective(value: BaseException) -> bool:
    """A collective (or the store) failed because another process of the job ended."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return False
    return isinstance(value, RuntimeError) and PEER_LOST.search(str(value)) is not None


def _spawned_user_error(value: BaseException) -> Optional[str]:
    """The message of a ``VecoUserError`` a child of ``torch.multiprocessing.spawn``
    raised, from the traceback text its ``ProcessRaisedException`` carries."""
    if type(value).__name__ != "ProcessRaisedException":
        return None
    last = str(value).rstrip().splitlines()[-1]
    return last[len(SPAWNED_USER_ERROR) :] if last.startswith(SPAWNED_USER_ERROR) else None


def record_for_torchrun(line: Optional[str], traceback_text: str) -> None:
    """Write the error where torchrun's summary reads it (``TORCHELASTIC_ERROR_FILE``, in
    torchelastic's format): its "traceback" is the one line of a one-line error, else the
    traceback."""
    path = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if not path:
        return
    shown = line if line is not None else traceback_text
    last = shown.rstrip().splitlines()[-1] if shown.strip() else ""
    info = {"py_callstack": shown, "timestamp": str(int(time.time()))}
    try:
        with open(path, "w") as f:
            json.dump({"message": {"message": last, "extraInfo": info}}, f)
    except OSError:
        pass


def _end_process(interrupted: bool) -> None:
    """End the process now, as the interpreter would end it after an uncaught exception
    (exit status 1; killed by SIGINT after Ctrl-C), but without its finalization."""
    atexit._run_exitfuncs()  # logging's flush, fairseq's tensorboard writers
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed, or a broken pipe
            pass
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(1)


class _Ending:
    """Whether an outer hook (torch's, wrapped by ``end_after_outer_hook``) ends the
    process after ours has written."""

    deferred = False


def one_line(kind, value) -> Optional[str]:
    """The one line an exception ends the command with; None: its traceback."""
    prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
    if issubclass(kind, VecoUserError):
        return f"{prog}: error: {value}"
    if issubclass(kind, KeyboardInterrupt):
        return f"{prog}: interrupted; resume with the same command"
    spawned = _spawned_user_error(value)
    if spawned is not None:
        return f"{prog}: error: [rank{value.error_index}] {spawned}"
    if _broken_collective(value):
        said = re.sub(r"^\[[^\]]*\]\s*", "", str(value).strip())  # gloo's source line
        said = said.split(". ")[0].splitlines()[0][:200]
        return f"{prog}: stopped: another process of this job ended ({said})"
    return None


def _one_line_excepthook(previous):
    def excepthook(kind, value, traceback):
        line = one_line(kind, value)
        rank = launched_rank()
        if line is None:
            stream, sys.stderr = sys.stderr, io.StringIO()
            try:
                previous(kind, value, traceback)
            finally:
                text, sys.stderr = sys.stderr.getvalue(), stream
        else:
            text = line + "\n"
        if rank is not None:
            record_for_torchrun(line, text)
            repeated = issubclass(kind, (VecoUserError, KeyboardInterrupt))
            if line is not None and repeated and not first_to_write(line):
                text = ""
            elif not _Ending.deferred:  # torch's hook prefixes the lines it prints
                text = "".join(f"[rank{rank}]: {s}" for s in text.splitlines(keepends=True))
        sys.stderr.write(text)
        if not (_Ending.deferred or hasattr(sys, "ps1") or sys.flags.interactive):
            _end_process(issubclass(kind, KeyboardInterrupt))  # a REPL goes on

    return excepthook


def end_after_outer_hook() -> None:
    """Called once another hook has wrapped ours (torch's ``init_process_group``
    installs one that prints what ours writes only after ours returns): end the process
    after that hook, not inside ours; idempotent."""

    def wrap(outer):
        def ending(kind, value, traceback):
            nested = _Ending.deferred  # a later process group wrapped this one too
            _Ending.deferred = True
            try:
                outer(kind, value, traceback)
            finally:
                _Ending.deferred = nested
            if not (nested or hasattr(sys, "ps1") or sys.flags.interactive):
                _end_process(issubclass(kind, KeyboardInterrupt))

        return ending

    wrap_once(sys, "excepthook", wrap, ENDING)


def install() -> None:
    """Install the one-line ``sys.excepthook``; idempotent. (:mod:`veco_plugin.hooks`
    installs it with the plugin's other process-wide hooks.)"""
    wrap_once(sys, "excepthook", _one_line_excepthook, ONE_LINE)
