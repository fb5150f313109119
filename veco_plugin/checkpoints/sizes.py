"""A pre-trained checkpoint's sizes, and the ``veco_transformer`` arch that has them.

Every size comes from the checkpoint's weights (layers, width, FFN, vocabulary rows,
positions) except the number of attention heads, which only its config says
(:func:`pretrained_sizes`: ``veco-init-nmt``, ``veco-xtreme``). :func:`resolve_arch` picks
the named ``veco_transformer_*`` arch of exactly those sizes, else the generic
``veco_transformer`` with every size as a flag (:func:`size_flags`).
"""

import re
from argparse import Namespace
from dataclasses import dataclass
from typing import Any, List, Mapping, Optional

from torch import Tensor

from ..errors import VecoUserError
from ..models.layer_spec import count_layers
from .config import cfg_value

MODEL = "veco_transformer"
GENERIC_ARCH = "veco_transformer"  # sizes from the command line (size_flags)
_EMBED = re.compile(r"^(encoder|decoder)\.sentence_encoder\.embed_tokens\.weight$")


class SizesError(VecoUserError):
    """Not an encoder checkpoint, or an ``--arch`` without its sizes: one line."""


@dataclass(frozen=True)
class ArchSizes:
    """An encoder's shape; ``heads`` is 0 when unknown (a checkpoint without config)."""

    layers: int
    dim: int
    ffn: int
    heads: int

    def describe(self) -> str:
        """``2 layers x 64 (FFN 256, 4 heads)``."""
        heads = f", {self.heads} heads" if self.heads else ""
        return f"{self.layers} layers x {self.dim} (FFN {self.ffn}{heads})"


@dataclass(frozen=True)
class PretrainedSizes(ArchSizes):
    """A checkpoint's shape: the encoder's, plus embedding rows ``V`` and position rows
    (``max_positions + padding_idx + 1``: fairseq's learned-position offset)."""

    rows: int
    position_rows: int


def pretrained_sizes(model_state: Mapping[str, Tensor], model_args: Any) -> PretrainedSizes:
    """Sizes of a veco/XLM-R/RoBERTa state dict in the current or the old fairseq layout
    (``{encoder,decoder}.sentence_encoder.*``); ``model_args``: its config (heads), or None.

    ``embed_tokens.weight``: (V, C) -> rows, dim; ``layers.0.fc1.weight``: (F, C) -> ffn;
    ``embed_positions.weight``: (P, C) -> position_rows.
    """
    embed = [k for k in model_state if _EMBED.match(k)]
    if not embed:
        raise SizesError(
            "no *.sentence_encoder.embed_tokens.weight: not a veco/XLM-R/RoBERTa checkpoint"
        )
    prefix = embed[0].rsplit(".embed_tokens.weight", 1)[0]
    rows, dim = model_state[embed[0]].shape
    fc1 = model_state.get(f"{prefix}.layers.0.fc1.weight")
    positions = model_state.get(f"{prefix}.embed_positions.weight")
    if fc1 is None or positions is None:
        raise SizesError(
            f"{prefix} has no layers.0.fc1 or no learned positions: "
            "not a veco/XLM-R/RoBERTa checkpoint"
        )
    return PretrainedSizes(
        layers=count_layers(model_state, f"{prefix}.layers"),
        dim=int(dim),
        ffn=int(fc1.shape[0]),
        heads=int(cfg_value(model_args, "encoder_attention_heads", 0) or 0),
        rows=int(rows),
        position_rows=int(positions.shape[0]),
    )


def arch_sizes(arch: str) -> ArchSizes:
    """The encoder sizes a registered arch fills in by default."""
    from fairseq.models import ARCH_CONFIG_REGISTRY

    ns = Namespace()
    ARCH_CONFIG_REGISTRY[arch](ns)
    return ArchSizes(
        layers=ns.encoder_layers,
        dim=ns.encoder_embed_dim,
        ffn=ns.encoder_ffn_embed_dim,
        heads=ns.encoder_attention_heads,
    )


def _matches(arch: str, sizes: ArchSizes) -> bool:
    own = arch_sizes(arch)
    return (own.layers, own.dim, own.ffn) == (sizes.layers, sizes.dim, sizes.ffn) and (
        not sizes.heads or own.heads == sizes.heads
    )


def resolve_arch(requested: Optional[str], sizes: ArchSizes) -> str:
    """The ``veco_transformer_*`` arch whose sizes are the checkpoint's, else the generic
    ``veco_transformer`` (every size from :func:`size_flags`); ``requested`` (``--arch``)
    must fit them."""
    from fairseq.models import ARCH_MODEL_INV_REGISTRY

    named = sorted(a for a in ARCH_MODEL_INV_REGISTRY[MODEL] if a != GENERIC_ARCH)
    fitting = [a for a in named if _matches(a, sizes)]
    if requested == GENERIC_ARCH:
        return requested
    if requested is not None:
        if requested not in named:
            raise SizesError(
                f"--arch {requested}: unknown; choose one of {', '.join(named)} "
                f"or {GENERIC_ARCH} (sizes from the checkpoint)"
            )
        if not _matches(requested, sizes):
            hint = f"--arch {fitting[0]}" if fitting else f"--arch {GENERIC_ARCH}"
            raise SizesError(
                f"--arch {requested} is {arch_sizes(requested).describe()} but the checkpoint "
                f"is {sizes.describe()}: use {hint} (or leave --arch out)"
            )
        return requested
    return fitting[0] if fitting else GENERIC_ARCH


def size_flags(arch: str, sizes: ArchSizes) -> List[str]:
    """fairseq-train flags that give ``arch`` the checkpoint's sizes (none for a named
    arch of exactly these sizes; the decoder's width, FFN and heads follow the encoder's)."""
    if arch != GENERIC_ARCH:
        return []
    if not sizes.heads:
        raise SizesError(
            "the checkpoint's config does not say its number of attention heads and no "
            f"named arch has its sizes ({sizes.describe()}): pass the --arch it was trained as"
        )
    return [
        "--encoder-layers", str(sizes.layers),
        "--encoder-embed-dim", str(sizes.dim),
        "--encoder-ffn-embed-dim", str(sizes.ffn),
        "--encoder-attention-heads", str(sizes.heads),
    ]  # fmt: skip
