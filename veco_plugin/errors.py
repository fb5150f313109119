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
"""

import atexit
import os
import signal
import sys

from .patching import wrap_once


class VecoUserError(ValueError):
    """A mistake in the user's files, flags or data; the message names the file or
    flag and the fix."""


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


def _one_line_excepthook(previous):
    def excepthook(kind, value, traceback):
        prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
        if issubclass(kind, VecoUserError):
            sys.stderr.write(f"{prog}: error: {value}\n")
        elif issubclass(kind, KeyboardInterrupt):
            sys.stderr.write(f"{prog}: interrupted; resume with the same command\n")
        else:
            previous(kind, value, traceback)
        if not (hasattr(sys, "ps1") or sys.flags.interactive):  # a REPL goes on
            _end_process(issubclass(kind, KeyboardInterrupt))

    return excepthook


def install() -> None:
    """Install the one-line ``sys.excepthook``; idempotent. (:mod:`veco_plugin.hooks`
    installs it with the plugin's other process-wide hooks.)"""
    wrap_once(sys, "excepthook", _one_line_excepthook, "one_line")
