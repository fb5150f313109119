"""Ctrl-C at any moment of ``fairseq-train``: one line, a prompt exit, no half-written or
leftover file, and the same command resumes.

Where the SIGINT lands decides what a stock run does: in a DataLoader worker first (a
terminal sends it to the whole process group), the worker ends and the main process fails
with "DataLoader worker exited unexpectedly"; inside ``torch.save`` of a checkpoint it
leaves ``checkpoint_E_U.pt.tmp``. Importing the plugin makes it one behaviour:

- DataLoader workers ignore SIGINT: the main process stops them when it stops.
- During fairseq's ``save_checkpoint`` (the write, its rename, the copies to
  ``checkpoint_last.pt`` / ``checkpoint_best.pt``) a first SIGINT is noted on stderr
  (``PROG: interrupted: finishing the checkpoint save, then stopping (Ctrl-C again stops
  at once)``) and raised when the save has ended; a second one raises at once, and the
  write in progress removes its ``.tmp`` (every file stays complete: the writes are atomic,
  :mod:`.atomic`).
- The ``KeyboardInterrupt`` ends the command in one line (:mod:`veco_plugin.errors`):
  ``PROG: interrupted; resume with the same command``.
- A ``.tmp`` that a harder stop left (SIGKILL, power loss) is removed, with a log line,
  when the next run of that ``--save-dir`` starts (:func:`remove_leftovers`).

The time from the signal to the exit is the save in progress, if any, plus the step that
is running (docs/troubleshooting.md).
"""

import functools
import glob
import inspect
import logging
import os
import signal
import sys
import threading
from typing import List

from ..patching import wrap_once

logger = logging.getLogger(__name__)


def _prog() -> str:
    return os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"


def _finishing_first(save_checkpoint):
    """fairseq's ``save_checkpoint`` that a first SIGINT does not cut (see above)."""

    @functools.wraps(save_checkpoint)
    def wrapper(*args, **kwargs):
        main = threading.current_thread() is threading.main_thread()
        if not main or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            return save_checkpoint(*args, **kwargs)  # someone else handles Ctrl-C
        noted: List[int] = []

        def note(signum, frame):
            if noted:
                raise KeyboardInterrupt
            noted.append(signum)
            sys.stderr.write(
                f"{_prog()}: interrupted: finishing the checkpoint save, then stopping "
                "(Ctrl-C again stops at once)\n"
            )
            sys.stderr.flush()

        signal.signal(signal.SIGINT, note)
        try:
            saved = save_checkpoint(*args, **kwargs)
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        if noted:
            raise KeyboardInterrupt
        return saved

    return wrapper


def _removing_tmp(torch_persistent_save):
    """fairseq's ``torch_persistent_save`` that removes its ``.tmp`` when the write is
    cut (Ctrl-C twice, an error)."""

    @functools.wraps(torch_persistent_save)
    def wrapper(obj, filename, *args, **kwargs):
        try:
            return torch_persistent_save(obj, filename, *args, **kwargs)
        except BaseException:
            if isinstance(filename, str) and os.path.isfile(f"{filename}.tmp"):
                os.remove(f"{filename}.tmp")
            raise

    return wrapper


def worker_loop_ignoring_sigint(*args, **kwargs):
    """torch's DataLoader worker loop, SIGINT ignored (a module-level function: a
    ``spawn`` or ``forkserver`` DataLoader pickles its target by name)."""
    from torch.utils.data._utils import worker

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return inspect.unwrap(worker._worker_loop)(*args, **kwargs)


def remove_leftovers(save_dir: str) -> None:
    """Remove the ``checkpoint*.pt.tmp`` files of ``save_dir`` (a write that a kill cut
    short), each with a log line. Called when a run starts, holding the save dir's lock."""
    for path in sorted(glob.glob(os.path.join(save_dir, "checkpoint*.pt.tmp"))):
        logger.warning("removing %s: a checkpoint write that a stopped run left unfinished", path)
        os.remove(path)


def install() -> None:
    """The SIGINT handling above; idempotent."""
    from fairseq import checkpoint_utils
    from torch.utils.data._utils import worker

    wrap_once(checkpoint_utils, "save_checkpoint", _finishing_first, "finish_save")
    wrap_once(checkpoint_utils, "torch_persistent_save", _removing_tmp, "remove_tmp")
    if worker._worker_loop is not worker_loop_ignoring_sigint:
        worker_loop_ignoring_sigint.__wrapped__ = worker._worker_loop  # type: ignore[attr-defined]
        worker._worker_loop = worker_loop_ignoring_sigint
