"""One training run per ``--save-dir``.

Two runs writing one save dir at once (a job started twice, two launches that each
think they are rank 0) overwrite each other's ``checkpoint_last.pt`` and die renaming a
``.tmp`` the other has moved. Importing the plugin wraps fairseq's
``checkpoint_utils.load_checkpoint`` (every training run calls it once, before the first
update): the first rank takes an exclusive ``flock`` on ``SAVE_DIR/train.lock`` for the
life of the process (the kernel releases it when the process ends, however it ends),
and a second run finds it held and stops in one line naming the directory and the run
holding it. ``--no-save`` runs write nothing and take no lock.
"""

import fcntl
import functools
import os
import socket
from typing import Dict

from fairseq.file_io import PathManager

from ..errors import VecoUserError
from ..patching import wrap_once

LOCK = "train.lock"
_held: Dict[str, int] = {}  # real save dir -> descriptor holding its lock (this process)


def lock_save_dir(save_dir: str) -> None:
    """Hold ``save_dir``'s lock for the life of this process, or raise naming the
    process that holds it."""
    key = os.path.realpath(save_dir)
    if key in _held:
        return
    os.makedirs(save_dir, exist_ok=True)
    path = os.path.join(save_dir, LOCK)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 200).decode("utf-8", "replace").strip() or "another process"
        os.close(fd)
        raise VecoUserError(
            f"--save-dir {save_dir} is in use by another training run ({holder}): give each "
            "run its own --save-dir, or wait for that run to end"
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode())
    _held[key] = fd


def _locked(load_checkpoint):
    @functools.wraps(load_checkpoint)
    def wrapper(cfg, trainer, **passthrough_args):
        # a checkpoint config without ``no_save`` (fairseq's own tests build partial
        # ones) is read as fairseq reads it: this wrapper adds no required key
        writes = isinstance(cfg.save_dir, str) and not getattr(cfg, "no_save", False)
        if writes and trainer.data_parallel_rank == 0:
            if not PathManager.path_requires_pathmanager(cfg.save_dir):
                lock_save_dir(cfg.save_dir)
        return load_checkpoint(cfg, trainer, **passthrough_args)

    return wrapper


def install() -> None:
    from fairseq import checkpoint_utils

    wrap_once(checkpoint_utils, "load_checkpoint", _locked, "save_dir_lock")
