"""Ctrl-C at any moment of ``fairseq-train``: one line, a prompt exit, no half-written or
leftover file, and the same command resumes.

Where the SIGINT lands decides what a stock run does: in a DataLoader worker first (a
terminal sends it to the whole process group), the worker ends and the main process fails
with "DataLoader worker exited unexpectedly"; inside ``torch.save`` of a checkpoint it
leaves ``checkpoint_E_U.pt.tmp``. Importing the plugin makes it one behaviour:

- DataLoader workers ignore SIGINT: the main process stops them when it stops.
- From the start of training (fairseq's ``load_checkpoint``), a first SIGINT is noted on
  stderr (``PROG: interrupted: stopping at the next step (Ctrl-C again stops at once)``,
  or ``finishing the checkpoint save, then stopping`` during fairseq's ``save_checkpoint``:
  the write, its rename, the copies to ``checkpoint_last.pt`` / ``checkpoint_best.pt``)
  and raised before the next training or validation step, or when the save has ended.
  Raised where the signal lands, it could be swallowed: inside a ``__del__`` (a DataLoader
  iterator shutting its workers down) Python only prints "Exception ignored" and the run
  went on. A second SIGINT raises at once; the write in progress removes its ``.tmp``
  (every file stays complete: the writes are atomic, :mod:`.atomic`).
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

from ..patching import wrap_once

logger = logging.getLogger(__name__)


def _prog() -> str:
    return os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"


class _Stop:
    """The run's Ctrl-C state: ``asked`` once a first SIGINT came; ``saving`` while
    fairseq's ``save_checkpoint`` runs."""

    asked = False
    saving = False


def _on_sigint(signum, frame) -> None:
    """The first SIGINT is noted (the run stops at the next step, or when the save in
    progress has ended); a second one raises at once."""
    if _Stop.asked:
        raise KeyboardInterrupt
    _Stop.asked = True
    then = (
        "finishing the checkpoint save, then stopping"
        if _Stop.saving
        else ("stopping at the next step")
    )
    sys.stderr.write(f"{_prog()}: interrupted: {then} (Ctrl-C again stops at once)\n")
    sys.stderr.flush()


def stop_if_asked() -> None:
    """Raise the noted Ctrl-C (``KeyboardInterrupt``: the command ends in one line)."""
    if _Stop.asked:
        raise KeyboardInterrupt


def _handling_sigint(load_checkpoint):
    """fairseq's ``load_checkpoint`` (called once, as training starts): from then on
    SIGINT is :func:`_on_sigint`'s, if it was Python's default (in the main thread; the
    handler stays for the process: an in-process run after it starts afresh)."""

    @functools.wraps(load_checkpoint)
    def wrapper(*args, **kwargs):
        main = threading.current_thread() is threading.main_thread()
        if main and signal.getsignal(signal.SIGINT) in (signal.default_int_handler, _on_sigint):
            _Stop.asked = False  # a run of its own (in-process runs one after another)
            signal.signal(signal.SIGINT, _on_sigint)
        return load_checkpoint(*args, **kwargs)

    return wrapper


def _stopping_before(step):
    """A Trainer's ``train_step`` / ``valid_step`` that first raises a noted Ctrl-C."""

    @functools.wraps(step)
    def wrapper(*args, **kwargs):
        stop_if_asked()
        return step(*args, **kwargs)

    return wrapper


def _finishing_first(save_checkpoint):
    """fairseq's ``save_checkpoint``: a Ctrl-C during it is raised when it has ended."""

    @functools.wraps(save_checkpoint)
    def wrapper(*args, **kwargs):
        stop_if_asked()
        _Stop.saving = True
        try:
            saved = save_checkpoint(*args, **kwargs)
        finally:
            _Stop.saving = False
        stop_if_asked()
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
    from fairseq.trainer import Trainer
    from torch.utils.data._utils import worker

    wrap_once(checkpoint_utils, "load_checkpoint", _handling_sigint, "handle_sigint")
    wrap_once(checkpoint_utils, "save_checkpoint", _finishing_first, "finish_save")
    for step in ("train_step", "valid_step"):
        wrap_once(Trainer, step, _stopping_before, "stop_before")
    wrap_once(checkpoint_utils, "torch_persistent_save", _removing_tmp, "remove_tmp")
    if worker._worker_loop is not worker_loop_ignoring_sigint:
        worker_loop_ignoring_sigint.__wrapped__ = worker._worker_loop  # type: ignore[attr-defined]
        worker._worker_loop = worker_loop_ignoring_sigint
