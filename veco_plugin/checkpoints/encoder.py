"""The one way every tool reads a checkpoint: checked, then loaded by fairseq.

* :func:`read_checkpoint`: the state of a fairseq checkpoint, or one line naming how the
  user gave it (``--path CKPT``, ``--checkpoint NAME=CKPT``) and the fix;
* :func:`load_encoder`: a pre-trained encoder (``veco_pretraining``, or fairseq's RoBERTa/
  XLM-R ``masked_lm``) for ``veco-align``, ``veco-retrieve`` and ``veco-export-hf``, set up
  by fairseq's ``load_model_ensemble_and_task`` from the checkpoint's own configuration with
  its data directory replaced by one holding the dictionary (:func:`find_dictionary`);
* :func:`find_dictionary`, :func:`find_spm_model`, :func:`load_spm_model`: a checkpoint's
  vocabulary, by one rule for every tool: the file given (``--dict``, ``--spm-model``), else
  the one next to the checkpoint (``SPM_NAMES``, ``dict.txt``: the released XLM-R layout),
  else the one in the data directory its training recorded (what ``fairseq-train
  --save-dir`` leaves: the DATA of ``veco-prepare-pretraining`` holds both).

Classifiers load through :mod:`veco_plugin.checkpoints.classifier`, on :func:`read_checkpoint`.
"""

import contextlib
import os
import tempfile
from typing import Any, Dict, Iterator, Mapping, Optional, Tuple

import torch
from fairseq import checkpoint_utils
from fairseq.data import Dictionary
from fairseq.dataclass.utils import overwrite_args_by_name
from fairseq.models import ARCH_MODEL_NAME_REGISTRY, MODEL_REGISTRY
from fairseq.models.roberta import RobertaModel

from ..corpora.subwords import load_sentencepiece
from ..errors import VecoUserError
from .config import cfg_value
from .load_errors import describe

# the tasks whose checkpoints hold a pre-trained encoder (veco, RoBERTa, XLM-R)
ENCODER_TASKS = ("veco_pretraining", "masked_lm", "multilingual_masked_lm")

# the dictionary file a fairseq task reads from its data directory
DICT_NAME = "dict.txt"

# sentencepiece models that sit next to a checkpoint: the released XLM-R layout, then ours
SPM_NAMES = ("sentencepiece.bpe.model", "spm.model")

# what every refusal of an unreadable encoder checkpoint ends with
ENCODER_FIX = (
    "give a complete fairseq checkpoint (fairseq-train's checkpoint_best.pt, or the released "
    "XLM-R model.pt)"
)


def check_checkpoint_path(path: str, named: Optional[str] = None) -> None:
    """Fail early, before anything slow, on a checkpoint that is missing or a directory;
    ``named``: how the user gave it (default ``--path PATH``)."""
    named = named or f"--path {path}"
    if not os.path.exists(path):
        raise VecoUserError(f"{named}: no such file")
    if os.path.isdir(path):
        found = sorted(f for f in os.listdir(path) if f.endswith(".pt"))
        hint = f" (it holds {', '.join(found[:4])})" if found else ""
        raise VecoUserError(
            f"{named} is a directory{hint}: give the checkpoint file, e.g. "
            f"{os.path.join(path, found[0] if found else 'checkpoint_best.pt')}"
        )


def read_checkpoint(
    path: str,
    named: Optional[str] = None,
    fix: str = ENCODER_FIX,
    overrides: Optional[Mapping[str, object]] = None,
) -> Dict:
    """The state of the fairseq checkpoint ``path`` (``overrides`` replacing saved
    settings, as fairseq's ``arg_overrides``), checked: a file, readable, with a ``model``
    and a configuration. Anything else is one line: ``named`` (default ``--path PATH``),
    why, and ``fix``."""
    named = named or f"--path {path}"
    check_checkpoint_path(path, named)
    try:
        state = checkpoint_utils.load_checkpoint_to_cpu(path, dict(overrides or {}))
    except VecoUserError as exc:  # the plugin's own diagnosis (load_errors): "PATH: why"
        reason = str(exc).removeprefix("--path ").removeprefix(path).lstrip(": ")
        raise VecoUserError(f"{named}: {reason}: {fix}") from None
    except Exception as exc:  # not a torch file, truncated, or pickled by other code
        detail = str(exc).splitlines()[0] if str(exc) else ""
        raise VecoUserError(
            f"{named}: not a readable fairseq checkpoint ({type(exc).__name__}: {detail}): {fix}"
        ) from None
    if not isinstance(state, dict) or "model" not in state:
        raise VecoUserError(f"{named}: not a fairseq checkpoint (no 'model' entry): {fix}")
    if state.get("args") is None and state.get("cfg") is None:
        raise VecoUserError(f"{named}: the checkpoint records no configuration (cfg/args): {fix}")
    return state


def is_encoder(state: Dict) -> bool:
    """Whether ``state`` holds a pre-trained encoder, or does not say what it holds."""
    arch, task = describe(state)
    model_class = MODEL_REGISTRY.get(ARCH_MODEL_NAME_REGISTRY.get(arch, arch))
    encoder = model_class is None or issubclass(model_class, RobertaModel)
    return encoder and task in (*ENCODER_TASKS, "?")


def refuse_other_models(path: str, state: Dict) -> None:
    """Refuse, before its task is set up, a checkpoint that holds no pre-trained encoder (a
    translation model from ``veco-init-nmt`` or fairseq-train, a fine-tuned classifier):
    its task would ask for files and flags these commands do not have."""
    if is_encoder(state):
        return  # a pre-trained encoder, or a checkpoint that does not say: fairseq decides
    arch, task = describe(state)
    made_from = ((state.get("extra_state") or {}).get("veco_init_nmt") or {}).get("pretrained")
    if made_from:
        fix = f"give the pre-training checkpoint veco-init-nmt made it from, {made_from}"
    else:
        fix = (
            "give the pre-training checkpoint it was initialized from (fairseq-train --task "
            "veco_pretraining, or a fairseq RoBERTa/XLM-R model.pt)"
        )
    kind = "translation" if "translation" in task else "fine-tuned"
    raise VecoUserError(
        f"--path {path} holds a {kind} model ({arch}, --task {task}), not a pre-trained "
        f"encoder: {fix}"
    )


def recorded_data_dir(state: Dict) -> Optional[str]:
    """The (first) data directory the checkpoint's task was trained with, if recorded."""
    for cfg in (state.get("args"), cfg_value(state.get("cfg"), "task")):
        data = cfg_value(cfg, "data")
        if data:
            return str(data).split(os.pathsep)[0]
    return None


def find_dictionary(path: str, state: Dict, dict_path: Optional[str] = None) -> str:
    """The ``dict.txt`` of a checkpoint: ``dict_path`` (``--dict``) if given, else the one next
    to the checkpoint (the released XLM-R layout), else the one in the data directory recorded
    in the checkpoint."""
    if dict_path is not None:
        if os.path.isdir(dict_path):
            raise VecoUserError(
                f"--dict {dict_path} is a directory: name the dictionary file, e.g. "
                f"{os.path.join(dict_path, DICT_NAME)}"
            )
        if not os.path.isfile(dict_path):
            raise VecoUserError(f"--dict {dict_path}: no such file")
        return dict_path
    candidates = [os.path.join(os.path.dirname(os.path.abspath(path)), DICT_NAME)]
    recorded = recorded_data_dir(state)
    if recorded:
        candidates.append(os.path.join(recorded, DICT_NAME))
    for candidate in candidates:
        if os.path.isfile(candidate):
            return candidate
    raise VecoUserError(
        f"--path {path}: no dictionary found (looked for {' and '.join(candidates)}): "
        "pass the dict.txt the model was trained with as --dict"
    )


@contextlib.contextmanager
def _data_dir_holding(dict_file: str) -> Iterator[str]:
    """A directory in which the task finds ``dict_file`` as ``dict.txt``: its own directory
    when it has that name, else a temporary one with a symbolic link."""
    if os.path.basename(dict_file) == DICT_NAME:
        yield os.path.dirname(os.path.abspath(dict_file))
        return
    with tempfile.TemporaryDirectory(prefix="veco-dict-") as tmp:
        os.symlink(os.path.abspath(dict_file), os.path.join(tmp, DICT_NAME))
        yield tmp


def _embedding_rows(state: Dict) -> Optional[int]:
    for key, value in state["model"].items():
        if key.endswith("sentence_encoder.embed_tokens.weight"):
            return int(value.shape[0])
    return None


def load_encoder(
    path: str,
    dict_path: Optional[str] = None,
    device: Optional[torch.device] = None,
    dtype: torch.dtype = torch.float32,
) -> Tuple[RobertaModel, Dictionary]:
    """Load a ``veco`` (``veco_pretraining``) or fairseq RoBERTa/XLM-R (``masked_lm``)
    checkpoint for feature extraction: eval mode, on ``device`` in ``dtype``. The veco task
    and fairseq's ``masked_lm`` only read ``dict.txt`` when set up.

    Returns:
        the model and its dictionary (``<mask>`` included, as in training).
    """
    state = read_checkpoint(path)
    refuse_other_models(path, state)
    dict_file = find_dictionary(path, state, dict_path)
    with _data_dir_holding(dict_file) as data_dir:
        if state.get("args") is not None:  # legacy checkpoints (the released XLM-R)
            state["args"].data = data_dir
        if state.get("cfg") is not None:
            overwrite_args_by_name(state["cfg"], {"data": data_dir})
        try:
            models, _, task = checkpoint_utils.load_model_ensemble_and_task([path], state=state)
        except VecoUserError as exc:  # the dictionary's own refusal names our link to it
            message = str(exc).replace(os.path.join(data_dir, DICT_NAME), dict_file)
            flag = "--dict " if dict_path is not None and message.startswith(dict_file) else ""
            raise VecoUserError(f"{flag}{message}") from None
        except RuntimeError as exc:
            if "size mismatch" not in str(exc) or "embed_tokens" not in str(exc):
                raise
            flag = "--dict " if dict_path is not None else ""
            raise VecoUserError(
                f"{flag}{dict_file}: the dictionary does not fit the checkpoint's embeddings "
                f"({_embedding_rows(state)} rows): pass the dict.txt the model was trained "
                "with as --dict"
            ) from None
    model = models[0]
    if not isinstance(model, RobertaModel):
        raise VecoUserError(
            f"--path {path}: a {type(model).__name__} checkpoint, not an encoder: give a veco "
            "or fairseq RoBERTa/XLM-R checkpoint"
        )
    model.eval()
    model.to(device=device or torch.device("cpu"), dtype=dtype)
    return model, task.source_dictionary


def check_spm_model(model_path: str) -> None:
    """Refuse an ``--spm-model`` that is missing or a directory."""
    if os.path.isdir(model_path):
        found = sorted(f for f in os.listdir(model_path) if f.endswith(".model"))
        raise VecoUserError(
            f"--spm-model {model_path} is a directory: name the sentencepiece model file, "
            f"e.g. {os.path.join(model_path, found[0] if found else SPM_NAMES[1])}"
        )
    if not os.path.isfile(model_path):
        raise VecoUserError(f"--spm-model {model_path}: no such file")


def not_a_spm_model(model_path: str, exc: BaseException) -> str:
    """The refusal of an ``--spm-model`` that sentencepiece cannot load."""
    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return (
        f"--spm-model {model_path}: not a sentencepiece model ({reason}): pass the .model "
        "file the checkpoint's training text was encoded with"
    )


def load_spm_model(model_path: str) -> Any:
    """The ``SentencePieceProcessor`` of ``--spm-model`` (checked: a file sentencepiece
    reads)."""
    check_spm_model(model_path)
    try:
        return load_sentencepiece(model_path)
    except VecoUserError as exc:  # sentencepiece cannot parse it
        raise VecoUserError(not_a_spm_model(model_path, exc.__cause__ or exc)) from None


def _spm_model_in(directory: str) -> Optional[str]:
    found = [os.path.join(directory, n) for n in SPM_NAMES]
    return next((f for f in found if os.path.isfile(f)), None)


def spm_model_beside(checkpoint: str) -> Optional[str]:
    """A sentencepiece model next to ``checkpoint`` (``SPM_NAMES``), or None."""
    return _spm_model_in(os.path.dirname(os.path.abspath(checkpoint)))


def locate_spm_model(checkpoint: str, state: Optional[Dict] = None) -> Tuple[Optional[str], str]:
    """(the sentencepiece model next to ``checkpoint``, else in the data directory its
    training recorded, or None; where it was looked for). ``state``: the checkpoint's when
    the caller has read it, else read here when nothing is next to it."""
    found = spm_model_beside(checkpoint)
    if found:
        return found, ""
    recorded = recorded_data_dir(read_checkpoint(checkpoint) if state is None else state)
    if not recorded:
        return None, "next to it"
    return _spm_model_in(recorded), f"next to it nor in its training data {recorded}"


def find_spm_model(spm_model: Optional[str], checkpoint: str, state: Optional[Dict] = None) -> str:
    """``--spm-model`` (checked), else :func:`locate_spm_model`'s (the rule of
    :func:`find_dictionary`)."""
    if spm_model:
        check_spm_model(spm_model)
        return spm_model
    found, looked = locate_spm_model(checkpoint, state)
    if not found:
        raise VecoUserError(
            f"--path {checkpoint}: no {' or '.join(SPM_NAMES)} {looked}: pass the "
            "sentencepiece model it was trained with as --spm-model"
        )
    return found
