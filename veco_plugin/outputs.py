"""Output files of the console scripts: checked before any work, written atomically.

A command that would fail to write its result (``--output`` naming a directory, or a
path under a file) refuses before it loads a model or reads a corpus, with one line
naming the flag; a command that fails or is interrupted while writing leaves no file
and no ``.part`` behind.
"""

import os

from .errors import VecoUserError


def check_output_file(path: str, flag: str, example: str = "out.txt") -> None:
    """``flag path`` names a file that can be created: not a directory, and not under a
    path that is a file; ``example`` is the file name suggested inside a directory."""
    if os.path.isdir(path):
        raise VecoUserError(
            f"{flag} {path} is a directory: name a file, e.g. {os.path.join(path, example)}"
        )
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise VecoUserError(f"{flag} {path}: {parent} is a file, not a directory")
    if not os.access(parent, os.W_OK):
        raise VecoUserError(f"{flag} {path}: cannot write in {parent} (permission denied)")


def write_text(path: str, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through ``path.part`` and a rename: the file
    is complete or absent; its folder is created."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    part = f"{path}.part"
    try:
        with open(part, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(part, path)
    except BaseException:
        if os.path.exists(part):
            os.remove(part)
        raise
