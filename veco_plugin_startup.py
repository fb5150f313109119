"""Ctrl-C in the first seconds of a ``fairseq-*`` or ``veco-*`` command: one line.

``fairseq-train --user-dir veco_plugin`` imports torch and fairseq (4-7 s cold) before it
imports the plugin, whose hooks (:mod:`veco_plugin.errors`) end a Ctrl-C in the line
``PROG: interrupted; resume with the same command``. A Ctrl-C in those seconds printed
Python's ``KeyboardInterrupt`` traceback instead. ``veco_plugin_startup.pth`` (installed
beside the packages) calls :func:`install` when any interpreter of the environment starts:
for those commands only, it ends an uncaught ``KeyboardInterrupt`` in that same line (and
by SIGINT, as the plugin does); anything else goes to the hook it found. ``torchrun``
ends a Ctrl-C (or SIGTERM) in torch's ``SignalException`` traceback, after its ranks have
said their line: it gets the same one line. Stdlib only: it runs before every program of
the environment.
"""

import os
import signal
import sys

LINE = "{prog}: interrupted; resume with the same command\n"
COMMANDS = ("fairseq-", "veco-", "torchrun")
# torch.distributed.elastic's exception for a signal to its agent (torchrun), by name:
# importing torch here would slow every interpreter's start
SIGNALLED = "SignalException"


def install() -> None:
    """Wrap ``sys.excepthook`` if this interpreter runs one of :data:`COMMANDS` (once)."""
    prog = os.path.basename(sys.argv[0]) if getattr(sys, "argv", None) else ""
    if prog.startswith(COMMANDS) and sys.excepthook is sys.__excepthook__:
        sys.excepthook = _one_line_interrupt


def _one_line_interrupt(kind, value, traceback) -> None:
    signum = signal.SIGINT
    if kind.__name__ == SIGNALLED and getattr(value, "sigval", None) in (
        signal.SIGINT,
        signal.SIGTERM,
    ):
        signum = value.sigval
    elif not issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, value, traceback)
        return
    sys.stderr.write(LINE.format(prog=os.path.basename(sys.argv[0])))
    sys.stderr.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
