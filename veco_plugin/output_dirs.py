"""Output directories of the console scripts: checked before any work, filled atomically.

The directory counterpart of :mod:`.outputs`. A command that writes a directory
(``veco-export-hf --output``, ``veco-import-hf --out``, ``veco-prepare-sentence-prediction
--output``) refuses, before it loads a model or reads a corpus, a path that is a file, lies
under a file or cannot be written, and a non-empty directory unless overwriting is allowed.
It then writes into a hidden directory beside it (:func:`staged_dir`): the files appear
under the final name only once all are written; a failure or Ctrl-C leaves nothing (no
stage, no directory or parent the command created).
"""

import contextlib
import os
import shutil
import tempfile
from typing import Iterator, List, Optional

from .errors import VecoUserError


def _existing_ancestor(path: str) -> str:
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    return parent


def check_output_dir(path: str, flag: str, overwrite: Optional[bool] = None) -> None:
    """``flag path`` names a directory that can be created or written into: not a file,
    not under a file, writable. ``overwrite`` False: an existing directory must be empty
    (the fix names ``--overwrite``); None: any existing directory is written into."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise VecoUserError(f"{flag} {path} is a file: give a directory (new or empty)")
    if os.path.isdir(path):
        if overwrite is False and os.listdir(path):
            raise VecoUserError(
                f"{flag} {path} is not empty: pass --overwrite or give a new directory"
            )
        writable = path
    else:
        writable = _existing_ancestor(path)
        if not os.path.isdir(writable):
            raise VecoUserError(f"{flag} {path}: {writable} is a file, not a directory")
    if not os.access(writable, os.W_OK | os.X_OK):
        raise VecoUserError(f"{flag} {path}: cannot write in {writable} (permission denied)")


def _make_parents(path: str) -> List[str]:
    """Create the missing parents of ``path``; return them, deepest first."""
    created = []
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):
        created.append(parent)
        parent = os.path.dirname(parent)
    for directory in reversed(created):
        os.mkdir(directory)
    return created


def _move_into(stage: str, path: str) -> None:
    """Every file under ``stage`` to the same place under the existing ``path``."""
    for root, _, files in os.walk(stage):
        target = os.path.join(path, os.path.relpath(root, stage))
        os.makedirs(target, exist_ok=True)
        for name in files:
            os.replace(os.path.join(root, name), os.path.join(target, name))


@contextlib.contextmanager
def staged_dir(path: str) -> Iterator[str]:
    """A new hidden directory beside ``path`` to write the output into. When the block
    ends normally, a new ``path`` is the stage renamed, an existing one receives its files
    (each replacing the file of its name); when it raises (Ctrl-C included), the stage and
    the parents made for it are removed."""
    path = os.path.normpath(path)
    created = _make_parents(path)
    parent = os.path.dirname(os.path.abspath(path))
    stage = tempfile.mkdtemp(dir=parent, prefix=f".{os.path.basename(path)}.part-")
    try:
        yield stage
        if os.path.isdir(path):
            _move_into(stage, path)
        else:
            os.rename(stage, path)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        for directory in created:
            with contextlib.suppress(OSError):  # not empty: someone else wrote there
                os.rmdir(directory)
        raise
    shutil.rmtree(stage, ignore_errors=True)
