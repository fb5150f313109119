"""One error type for user mistakes, ending every command line in one line.

Raised anywhere in the plugin, also deep inside ``fairseq-train`` / ``fairseq-generate``
(tasks, models, criteria, datasets), a ``VecoUserError`` ends the process with
``PROG: error: MESSAGE`` and exit status 1, no traceback; Ctrl-C ends with
``PROG: interrupted; resume with the same command``. Any other exception keeps its
full traceback: real bugs stay visible.
"""

import os
import sys

from .patching import wrap_once


class VecoUserError(ValueError):
    """A mistake in the user's files, flags or data; the message names the file or
    flag and the fix."""


def _one_line_excepthook(previous):
    def excepthook(kind, value, traceback):
        prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
        if issubclass(kind, VecoUserError):
            sys.stderr.write(f"{prog}: error: {value}\n")
        elif issubclass(kind, KeyboardInterrupt):
            sys.stderr.write(f"{prog}: interrupted; resume with the same command\n")
        else:
            previous(kind, value, traceback)

    return excepthook


def install() -> None:
    """Install the one-line ``sys.excepthook`` and the wrappers that turn fairseq's
    exceptions for recognised user mistakes (unusable checkpoints, truncated binarized
    data) into a ``VecoUserError``; idempotent."""
    from .checkpoints import load_errors
    from .data import binarized

    wrap_once(sys, "excepthook", _one_line_excepthook, "one_line")
    load_errors.install()
    binarized.install()
