"""Outputs of the console scripts, files and directories: checked before any work,
written atomically.

A command that would fail to write its result (an output file naming a directory, a
path under a file, an unwritable place, a non-empty directory it must not overwrite)
refuses before it loads a model or reads a corpus, with one line naming the flag. A
file is written through ``.part`` and a rename (:func:`write_text`); a directory is
filled in a hidden stage beside it (:func:`staged_dir`): a command that fails or is
interrupted while writing leaves no file, no stage, and no directory it created; the stage
of a process killed outright (SIGKILL, out of memory) is removed by the next command writing
that directory on the same machine.
"""

import contextlib
import glob
import os
import re
import shutil
import socket
import tempfile
from typing import Dict, Iterator, List, Optional

from .errors import VecoUserError


def check_named(paths: Dict[str, Optional[str]]) -> None:
    """Refuse a file flag given an empty string (``--output ""`` would fall back to
    stdout, ``--spm-model ""`` to the default): ``paths`` is ``{flag: value}``."""
    for flag, value in paths.items():
        if value is not None and not value.strip():
            raise VecoUserError(f"{flag} {value!r} names no file: give a file's path")


def check_output_file(
    path: str,
    flag: str,
    example: str = "out.txt",
    inputs: Optional[Dict[str, Optional[str]]] = None,
) -> None:
    """``flag path`` names a file that can be created: not a directory, not under a path
    that is a file, and none of ``inputs`` (``{flag: path}``), which it would overwrite;
    ``example`` is the file name suggested inside a directory."""
    for input_flag, input_path in (inputs or {}).items():
        if input_path and os.path.realpath(input_path) == os.path.realpath(path):
            raise VecoUserError(
                f"{flag} {path} is also {input_flag}: it would overwrite that input; name "
                "another file"
            )
    if os.path.isdir(path):
        raise VecoUserError(
            f"{flag} {path} is a directory: name a file, e.g. {os.path.join(path, example)}"
        )
    parent = _existing_ancestor(path)
    if not os.path.isdir(parent):
        raise VecoUserError(f"{flag} {path}: {parent} is a file, not a directory")
    if not os.access(parent, os.W_OK):
        raise VecoUserError(f"{flag} {path}: cannot write in {parent} (permission denied)")


@contextlib.contextmanager
def atomic_path(path: str) -> Iterator[str]:
    """``path.part``, for the block to write ``path``'s content to: renamed to ``path`` when
    the block ends normally, removed when it raises (Ctrl-C included), so ``path`` is
    complete or absent; its folder is created."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    part = f"{path}.part"
    try:
        yield part
        os.replace(part, path)
    finally:
        if os.path.exists(part):
            os.remove(part)


def write_text(path: str, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically (:func:`atomic_path`)."""
    with atomic_path(path) as part, open(part, "w", encoding="utf-8") as f:
        f.write(text)


def _existing_ancestor(path: str) -> str:
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    return parent


# the fix when a DATA directory, written whole, would land among other files
WHOLE = "give a new (or empty) directory: DATA is written whole, never mixed with other files"


def check_output_dir(
    path: str,
    flag: str,
    overwrite: Optional[bool] = None,
    refill: str = "pass --overwrite or give a new directory",
) -> None:
    """``flag path`` names a directory that can be created or written into: not a file,
    not under a file, writable. ``overwrite`` False: an existing directory must be empty
    (``refill``: the fix, by default naming ``--overwrite``); None: any existing directory
    is written into."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise VecoUserError(
            f"{flag} {path} is a file, not a directory: give a directory (new or empty)"
        )
    if os.path.isdir(path):
        if overwrite is False and os.listdir(path):
            raise VecoUserError(f"{flag} {path} is not empty: {refill}")
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


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def _remove_orphans(stages: str) -> None:
    """Remove the stages ``<stages><pid>-*`` whose process (on this machine: the host is
    in ``stages``) no longer runs."""
    for stage in glob.glob(f"{glob.escape(stages)}*"):
        # exactly "<pid>-<mkdtemp's 8 characters>": not the stage of a host whose name
        # extends this one's (host "node" must not read "node-12"'s stage as pid 12)
        ours = re.fullmatch(r"(\d+)-[a-z0-9_]{8}", stage[len(stages) :])
        if ours and not _alive(int(ours.group(1))):
            shutil.rmtree(stage, ignore_errors=True)


@contextlib.contextmanager
def staged_dir(path: str) -> Iterator[str]:
    """A new hidden directory beside ``path`` to write the output into. When the block
    ends normally, a new ``path`` is the stage renamed, an existing one receives its files
    (each replacing the file of its name); when it raises (Ctrl-C included), the stage and
    the parents made for it are removed."""
    path = os.path.normpath(path)
    created = _make_parents(path)
    parent = os.path.dirname(os.path.abspath(path))
    stages = os.path.join(parent, f".{os.path.basename(path)}.part-{socket.gethostname()}-")
    _remove_orphans(stages)
    stage = tempfile.mkdtemp(dir=parent, prefix=f"{os.path.basename(stages)}{os.getpid()}-")
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
