"""A checkpoint that cannot serve ends the run in one line naming the file and the fix.

fairseq reads the checkpoints a user names in three places, and answers a wrong file
with a traceback: ``checkpoint_utils.load_checkpoint_to_cpu`` (a text file, a
truncated copy: an unpickling error), ``load_model_ensemble_and_task``
(``fairseq-generate --path``: ``OSError: Model file not found``) and
``Trainer.load_checkpoint`` (any failure to load the parameters becomes the generic
"Cannot load model parameters ... please ensure that the architectures match",
hiding the reason the plugin's models give). Importing the plugin wraps the three:
only the recognised user mistakes become a :class:`VecoUserError`, every other
exception keeps its traceback.
"""

import functools
import os
import re
import zipfile
from typing import Any, Dict, Optional, Tuple

from fairseq.file_io import PathManager

from ..errors import VecoUserError
from ..patching import wrap_once
from .config import cfg_value, checkpoint_model_cfg

_read: Dict[str, Tuple[str, str]] = {}  # path -> (arch, task) of the checkpoints read
_last_read = [""]  # the path read most recently


def describe(state: Dict[str, Any]) -> Tuple[str, str]:
    """(arch, task) a fairseq checkpoint was written with; "?" where it does not say."""
    model = checkpoint_model_cfg(state)
    arch = cfg_value(model, "arch") or cfg_value(model, "_name") or "?"
    cfg = state.get("cfg")
    task = cfg_value(cfg.get("task") if cfg is not None else None, "_name")
    return str(arch), str(task or cfg_value(state.get("args"), "task", "?"))


def not_a_checkpoint(path: str) -> Optional[str]:
    """Why ``path`` cannot be a fairseq checkpoint, or None if it could be one."""
    from .trusted_load import load_trusted

    with open(path, "rb") as f:
        head = f.read(4)
    if head.startswith(b"PK") and not zipfile.is_zipfile(path):
        return "truncated (an incomplete copy, or a run killed while writing it)"
    if not head.startswith(b"PK") and not head.startswith(b"\x80"):  # zip / legacy pickle
        return "not a PyTorch checkpoint (another kind of file)"
    try:
        state = load_trusted(path)
    except Exception:
        return None  # torch cannot read it either: not for us to explain
    if not isinstance(state, dict) or "model" not in state:
        return "a PyTorch file but not a fairseq checkpoint (no 'model' entry)"
    return None


def _readable(load_checkpoint_to_cpu):
    @functools.wraps(load_checkpoint_to_cpu)
    def wrapper(path, *args, **kwargs):
        local = not PathManager.path_requires_pathmanager(path)
        if local and not os.path.isfile(path):
            raise VecoUserError(f"{path}: no such checkpoint file")
        try:
            state = load_checkpoint_to_cpu(path, *args, **kwargs)
        except Exception:
            reason = not_a_checkpoint(path) if local else None
            if reason is None:
                raise
            raise VecoUserError(f"{path}: {reason}") from None
        _read[path], _last_read[0] = describe(state), path
        return state

    return wrapper


def _named(path: str, exc: VecoUserError, flag: str = "") -> VecoUserError:
    """``exc`` with ``path`` (and the flag that named it) in front, unless it names it."""
    if path and path not in str(exc):
        return VecoUserError(f"{flag}{' ' if flag else ''}{path}: {exc}")
    return exc


def _model_name(arch: str) -> Optional[str]:
    from fairseq.models import ARCH_MODEL_NAME_REGISTRY

    return ARCH_MODEL_NAME_REGISTRY.get(arch)


def _trained_positions(error: str) -> Optional[int]:
    """The --max-positions of a checkpoint whose learned position table (max_positions +
    padding_idx 1 + 1 rows) has another size than the model's, from torch's ``error``."""
    found = re.search(
        r"embed_positions\.weight: copying a param with shape torch\.Size\(\[(\d+),", error
    )
    return int(found.group(1)) - 2 if found else None


def _mismatch(trainer, filename: str, error: Exception) -> str:
    """One line for parameters of ``filename`` that do not fit the model being trained."""
    ours = cfg_value(trainer.cfg.model, "arch") or cfg_value(trainer.cfg.model, "_name") or "?"
    our_task = cfg_value(trainer.cfg.task, "_name", "?")
    theirs, their_task = _read.get(filename, ("?", "?"))
    positions = _trained_positions(str(error))
    detail = next((ln.strip() for ln in str(error).splitlines()[1:] if ln.strip()), str(error))
    detail = detail if len(detail) <= 160 else detail[:157] + "..."
    if theirs != ours:
        what = f"holds a {theirs} model (--task {their_task}), this run builds {ours} " + (
            f"(--task {our_task})"
        )
    else:  # same architecture (fine-tuning may change the task): the sizes differ
        what = f"does not fit this {ours} model ({detail})"
    cfg = trainer.cfg.checkpoint
    last = os.path.join(cfg.save_dir, f"checkpoint_last{trainer.checkpoint_suffix}.pt")
    if cfg.restore_file == "checkpoint_last.pt" and filename == last:
        fix = (
            "it is the last checkpoint of another run in --save-dir: use a fresh --save-dir, "
            "or that run's --arch, sizes and --task"
        )
    elif _model_name(theirs) == "veco" and _model_name(ours) != "veco":
        fix = (
            f"a pre-training checkpoint: convert it with veco-init-nmt --pretrained {filename} "
            "--output INIT.pt and fine-tune with the --restore-file INIT.pt and flags it prints"
        )
    elif positions is not None:  # and the arch, when it is not this run's
        arch = f"--arch {theirs} and " if theirs not in (ours, "?") else ""
        fix = f"pass {arch}the --max-positions it was trained with, {positions}"
    else:
        fix = "a checkpoint to start from needs this run's --arch, sizes and --task"
    return f"{filename} {what}: {fix}"


_OPTIMIZER_MISMATCH = ("Criterion does not match", "Optimizer does not match")


def _one_line_trainer_load(load_checkpoint):
    @functools.wraps(load_checkpoint)
    def wrapper(self, filename, *args, **kwargs):
        try:
            return load_checkpoint(self, filename, *args, **kwargs)
        except VecoUserError as exc:
            raise _named(filename, exc) from None
        except AssertionError as exc:
            if not str(exc).startswith(_OPTIMIZER_MISMATCH):
                raise
            raise VecoUserError(f"{filename}: {exc} (or use a fresh --save-dir)") from None
        except Exception as exc:
            cause = exc.__context__
            if not str(exc).startswith("Cannot load model parameters from checkpoint"):
                raise
            if isinstance(cause, VecoUserError):  # the plugin's model said why
                raise _named(filename, cause) from None
            if isinstance(cause, (RuntimeError, KeyError)):  # the parameters do not fit
                raise VecoUserError(_mismatch(self, filename, cause)) from None
            raise

    return wrapper


def _named_model_files(load_model_ensemble_and_task):
    from fairseq.checkpoint_utils import get_maybe_sharded_checkpoint_filename

    @functools.wraps(load_model_ensemble_and_task)
    def wrapper(filenames, arg_overrides=None, task=None, strict=True, suffix="", num_shards=1,
                state=None):  # fmt: skip
        for name in filenames if state is None else ():
            first = get_maybe_sharded_checkpoint_filename(name, suffix, 0, num_shards)
            if not PathManager.exists(first):
                raise VecoUserError(f"--path {first}: no such checkpoint file")
        _last_read[0] = ""
        try:
            return load_model_ensemble_and_task(
                filenames, arg_overrides, task, strict, suffix, num_shards, state
            )
        except VecoUserError as exc:
            raise _named(_last_read[0], exc, "--path") from None

    return wrapper


def install() -> None:
    """Wrap fairseq's checkpoint readers; idempotent."""
    from fairseq import checkpoint_utils
    from fairseq.trainer import Trainer

    for owner, name, wrap in (
        (checkpoint_utils, "load_checkpoint_to_cpu", _readable),
        (checkpoint_utils, "load_model_ensemble_and_task", _named_model_files),
        (Trainer, "load_checkpoint", _one_line_trainer_load),
    ):
        wrap_once(owner, name, wrap, "one_line")
