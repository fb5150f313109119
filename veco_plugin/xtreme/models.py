"""The pre-trained checkpoints ``veco-xtreme`` fine-tunes: their vocabulary files and the
fairseq-train flags that build a ``veco`` model of their shape.

A checkpoint is any encoder the plugin reads: a ``veco_pretraining`` checkpoint, fairseq's
RoBERTa/XLM-R ``model.pt``, ``veco-import-hf``'s output. Its sentencepiece model and
``dict.txt`` are ``--spm-model``/``--dict`` when given, else found next to it (XLM-R's
layout) or in the data directory its training recorded. Its shape comes from its weights
(:func:`..checkpoints.sizes.pretrained_sizes`): the ``--arch`` it was trained with when that is
a ``veco`` arch (else ``veco_base``), with every size as a flag, so that a checkpoint
trained with ``--encoder-layers`` and friends is rebuilt as it was.
"""

from dataclasses import dataclass
from typing import List, Optional, Tuple

from ..checkpoints.config import cfg_value, checkpoint_model_cfg
from ..checkpoints.encoder import (
    find_dictionary,
    find_spm_model,
    read_checkpoint,
    refuse_other_models,
)
from ..checkpoints.sizes import pretrained_sizes
from ..errors import VecoUserError

MODEL = "veco"
DEFAULT_ARCH = "veco_base"
LARGE_DIM = 1024


@dataclass(frozen=True)
class Pretrained:
    """One row of the table: ``path`` is None for the random-initialization baseline."""

    name: str
    path: Optional[str]
    spm_model: str
    dictionary: str
    model_flags: Tuple[str, ...]
    """``--arch`` and the sizes: fairseq-train builds the checkpoint's shape."""
    positions: int
    """the positions the model reads (``--max-positions``)."""

    @property
    def large(self) -> bool:
        """XLM-R large's size or more (1024 wide): XTREME's recipes for large models."""
        flags = dict(zip(self.model_flags[::2], self.model_flags[1::2]))
        return int(flags.get("--encoder-embed-dim", 0)) >= LARGE_DIM


def parse_checkpoint(value: str, taken: List[str]) -> Tuple[str, str]:
    """``NAME=PATH``: a NAME given once, a file."""
    name, sep, path = value.partition("=")
    if not sep or not name or not path:
        raise VecoUserError(f"--checkpoint {value}: expected NAME=PATH")
    if not all(c.isalnum() or c in "_-." for c in name):
        raise VecoUserError(
            f"--checkpoint {value}: the NAME becomes a directory under --out: use letters, "
            "digits, '_', '-' and '.'"
        )
    if name in taken:
        raise VecoUserError(f"--checkpoint {value}: the name {name} is taken: one per row")
    return name, path


LANGUAGE_ROWS = "embed_tokens.languages.weight"


def _arch(model_cfg) -> str:
    from fairseq.models import ARCH_MODEL_NAME_REGISTRY

    arch = cfg_value(model_cfg, "arch", "") or cfg_value(model_cfg, "_name", "")
    return arch if ARCH_MODEL_NAME_REGISTRY.get(arch) == MODEL else DEFAULT_ARCH


def describe(
    name: str, path: str, spm_model: Optional[str] = None, dict_path: Optional[str] = None
) -> Pretrained:
    """The checkpoint ``path`` of row ``name``, checked: an encoder, with its vocabulary."""
    named = f"--checkpoint {name}={path}"
    state = read_checkpoint(path, named)
    try:
        refuse_other_models(path, state)
        dictionary = find_dictionary(path, state, dict_path)
        spm = find_spm_model(spm_model, path, state)
    except VecoUserError as exc:
        raise VecoUserError(str(exc).replace(f"--path {path}", named)) from None
    model_cfg = checkpoint_model_cfg(state)
    try:
        sizes = pretrained_sizes(state["model"], model_cfg)
    except ValueError as exc:
        raise VecoUserError(f"{named}: {exc}") from None
    # fairseq's learned positions keep padding_idx + 1 rows before the first position
    positions = sizes.position_rows - 2
    flags = [
        "--arch", _arch(model_cfg),
        "--encoder-layers", str(sizes.layers),
        "--encoder-embed-dim", str(sizes.dim),
        "--encoder-ffn-embed-dim", str(sizes.ffn),
    ]  # fmt: skip
    if sizes.heads:
        flags += ["--encoder-attention-heads", str(sizes.heads)]
    languages = [v for k, v in state["model"].items() if k.endswith(LANGUAGE_ROWS)]
    if languages:  # XLM's language embeddings: their count, and the none row
        flags += ["--language-embeddings", str(languages[0].shape[0] - 1)]
    return Pretrained(
        name=name,
        path=path,
        spm_model=spm,
        dictionary=dictionary,
        model_flags=tuple(flags),
        positions=positions,
    )


def random_twin(of: Pretrained, name: str = "random") -> Pretrained:
    """The baseline: ``of``'s shape and vocabulary, random weights."""
    return Pretrained(name, None, of.spm_model, of.dictionary, of.model_flags, of.positions)
