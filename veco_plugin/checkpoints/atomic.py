"""Checkpoint files a run writes are complete or absent; a resume skips a broken one.

fairseq writes ``checkpoint_E_U.pt`` atomically (``.tmp`` + rename), then *copies* it
to ``checkpoint_last.pt`` / ``checkpoint_best.pt`` in place: a kill during that copy
(pre-emption, out-of-memory kill, power loss) leaves a truncated
``checkpoint_last.pt``, and the next run dies inside ``torch.load``. Importing the
plugin (``--user-dir veco_plugin``) makes those copies atomic too (copy to ``.tmp``,
fsync, rename) and lets a resume that finds ``checkpoint_last.pt`` unloadable say
so and continue from the newest loadable checkpoint of the save dir. A
``--restore-file`` / ``--finetune-from-model`` that does not exist is refused (fairseq
would start from scratch).
"""

import copy
import functools
import glob
import logging
import os
import shutil
import zipfile
from typing import Optional

from fairseq.file_io import PathManager

from ..errors import VecoUserError
from ..patching import wrap_once
from .interrupts import remove_leftovers

logger = logging.getLogger(__name__)


def is_complete(path: str) -> bool:
    """Whether ``path`` is a whole ``torch.save`` archive (zip central directory and
    pickle present); a truncated copy lacks the directory, which sits at the end."""
    try:
        with zipfile.ZipFile(path) as archive:
            return any(name.endswith("data.pkl") for name in archive.namelist())
    except (OSError, zipfile.BadZipFile):
        return False


def is_truncated(path: str) -> bool:
    """Whether ``path`` is a file that starts a zip archive (``torch.save``'s format)
    and is not a whole one; False for what cannot be read (fairseq says why) and for
    legacy pickle checkpoints."""
    try:
        with open(path, "rb") as f:
            if f.read(2) != b"PK":
                return False
    except (OSError, TypeError):
        return False
    return not is_complete(path)


def atomic_copy(src: str, dst: str) -> None:
    """``dst`` becomes a complete copy of ``src`` or stays as it was."""
    tmp = f"{dst}.tmp"
    with open(src, "rb") as source, open(tmp, "wb") as target:
        shutil.copyfileobj(source, target, length=16 << 20)
        target.flush()
        os.fsync(target.fileno())
    os.replace(tmp, dst)


class AtomicCopyPathManager(PathManager):
    """fairseq's ``PathManager`` whose local copies are atomic."""

    @staticmethod
    def copy(src_path: str, dst_path: str, overwrite: bool = False) -> bool:
        if PathManager.path_requires_pathmanager(src_path) or PathManager.path_requires_pathmanager(
            dst_path
        ):
            return PathManager.copy(src_path, dst_path, overwrite=overwrite)
        atomic_copy(src_path, dst_path)
        return True


def newest_complete(save_dir: str, suffix: str, exclude: str) -> Optional[str]:
    """The most recently written complete ``checkpoint*{suffix}.pt`` of ``save_dir``."""
    candidates = [
        path
        for path in glob.glob(os.path.join(save_dir, f"checkpoint*{suffix}.pt"))
        if os.path.abspath(path) != os.path.abspath(exclude)
    ]
    for path in sorted(candidates, key=os.path.getmtime, reverse=True):
        if is_complete(path):
            return path
    return None


def check_restore_file(cfg, suffix: str) -> None:
    """A ``--restore-file`` other than the default names an existing file: fairseq
    silently trains from scratch on a misspelt one."""
    restore = cfg.restore_file
    if restore != "checkpoint_last.pt" and not PathManager.exists(
        restore.replace(".pt", suffix + ".pt")
    ):
        raise VecoUserError(
            f"--restore-file {restore}: no such file (leave --restore-file out to resume "
            f"from --save-dir {cfg.save_dir}, or start from scratch)"
        )


def _resume_from_complete(load_checkpoint):
    """fairseq's ``load_checkpoint``, reading what it reads (``PathManager.exists`` of
    ``checkpoint_last.pt``) and nothing more, except where fairseq would fail: a
    truncated ``checkpoint_last.pt`` is replaced by the newest complete checkpoint of the
    save dir, fairseq's ``ValueError`` for a missing ``--finetune-from-model`` is one
    line, and the ``.tmp`` files a killed run left are removed (:func:`remove_leftovers`)."""

    @functools.wraps(load_checkpoint)
    def wrapper(cfg, trainer, **passthrough_args):
        check_restore_file(cfg, trainer.checkpoint_suffix)
        if cfg.save_dir and trainer.is_data_parallel_master:
            remove_leftovers(cfg.save_dir)
        if cfg.restore_file == "checkpoint_last.pt":
            last = os.path.join(cfg.save_dir, f"checkpoint_last{trainer.checkpoint_suffix}.pt")
            if PathManager.exists(last) and is_truncated(last):
                cfg = _from_newest_complete(cfg, last, trainer.checkpoint_suffix)
        try:
            return load_checkpoint(cfg, trainer, **passthrough_args)
        except ValueError as exc:
            if str(exc).startswith("--finetune-from-model") and "does not exist" in str(exc):
                raise VecoUserError(f"{exc}: give the checkpoint file to start from") from None
            raise

    return wrapper


def _from_newest_complete(cfg, last: str, suffix: str):
    """``cfg`` restoring the newest complete checkpoint of the save dir instead of the
    truncated ``last``."""
    fallback = newest_complete(cfg.save_dir, suffix, last)
    if fallback is None:
        raise VecoUserError(
            f"{last} is truncated and {cfg.save_dir} holds no other complete "
            "checkpoint: delete it to start from scratch"
        )
    logger.warning(
        "%s is truncated (a run killed while saving?): resuming from %s, the newest "
        "complete checkpoint in %s",
        last,
        fallback,
        cfg.save_dir,
    )
    cfg = copy.deepcopy(cfg)
    cfg.restore_file = fallback
    return cfg


def install() -> None:
    """Atomic checkpoint copies and truncation-aware resume; idempotent."""
    from fairseq import checkpoint_utils

    checkpoint_utils.PathManager = AtomicCopyPathManager
    wrap_once(checkpoint_utils, "load_checkpoint", _resume_from_complete, "resume")
