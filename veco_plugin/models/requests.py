"""What a criterion asks of ``VecoModel.forward`` and what it gets back.

A training step builds ``{name: request}`` and calls the model once
(``model(requests=...)``): fairseq's data-parallel wrappers see and synchronize what
passes through that one forward. The request's type says what is computed; the output
of each is the class beside it. Tensors are batch-first; B sentences (or pairs), T
positions, C hidden size, V vocabulary, W the width of one side of a pair
(``veco_plugin.modules.pair_layout.split_pair``).
"""

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple, Union

from torch import Tensor

from ..modules.pair_layout import Halves

MASKED_COUNT = """``masked_count``: the number of True in ``masked``, known on the host (the
collater's ``pair_masked`` / ``concat_masked``): the LM head gathers those rows without
waiting for the device; None: fairseq's head indexes by the mask, which waits for it (the
size of its result is on the device). ``padded``: False when the host knows ``tokens``
holds no pad (the collater's ``pair_padded`` / ``concat_padded``): no attention mask."""


@dataclass(frozen=True)
class Packing:
    """Packed rows (``veco_plugin.data.packing``): ``segments`` (N, T), each position's
    segment (pad: 0; attention stays inside a segment), ``positions`` (N, T) fairseq's
    positions, restarting at each segment. Stacked pairs (``TwoStream``): the x rows'
    segments are numbered as their partner y rows'."""

    segments: Tensor
    positions: Tensor

    @classmethod
    def of(cls, batch: Dict, layout: str, positions: str = "positions") -> Optional["Packing"]:
        """``batch``'s packing of ``layout`` (``pair``, ``concat``) and its
        ``<layout>_<positions>``; None for a batch padded one pair a row."""
        if f"{layout}_segments" not in batch:
            return None
        return cls(batch[f"{layout}_segments"], batch[f"{layout}_{positions}"])


@dataclass(frozen=True)
class Pointer:
    """XLM-Align's pointer network (eqs. 11-13) on ``layer`` of the concatenated pairs,
    each pair's sides where ``halves`` says."""

    layer: int
    halves: Halves


@dataclass(frozen=True)
class Exchange:
    """WEAM's cross-lingual prediction (eqs. 5-8) from the last layer of the
    concatenated pairs (sides where ``halves`` says): ``links`` (B, W, W) bool in the
    pair layout, read at ``select`` (2, B, W) bool, the masked positions of each half
    (``Halves.mask``): as many as the request's ``masked`` holds, whose logits give
    their count."""

    links: Tensor
    halves: Halves
    select: Tensor


@dataclass(frozen=True)
class PlugOut:
    """The H stream over ``tokens`` (B, T), the cross-attention plugged out.

    ``first_lengths`` (B,): positions restart at the second segment of a concatenated
    pair (XLM's TLM); None: they run on (VECO). ``packing``: several sequences to a row
    (its positions replace ``first_lengths``'). ``masked`` (B, T) bool: MLM logits at
    the masked positions; ``layers``: hidden states to keep (0 = embeddings, L = H^L);
    ``pointer`` / ``exchange``: heads on the same forward (``tokens`` a concatenated
    pair; they need ``VecoModel.build_extension``). ``masked_count``: see
    :data:`MASKED_COUNT`. ``target`` (B, T): the gold tokens at ``masked``: a model
    with ``--fused-lm-loss`` hands back their ``scores`` in place of the logits
    (not with ``exchange``, which reads the logits)."""

    tokens: Tensor
    masked: Optional[Tensor] = None
    first_lengths: Optional[Tensor] = None
    layers: Tuple[int, ...] = ()
    pointer: Optional[Pointer] = None
    exchange: Optional[Exchange] = None
    masked_count: Optional[int] = None
    padded: bool = True
    packing: Optional[Packing] = None
    target: Optional[Tensor] = None


@dataclass(frozen=True)
class SelfLabel:
    """Layer ``layer`` of the H stream over ``tokens`` (B, T) without gradient and
    without dropout (XLM-Align's self-labelling, Algorithm 1 line 6);
    ``first_lengths`` and ``packing`` as :class:`PlugOut`."""

    tokens: Tensor
    layer: int
    first_lengths: Optional[Tensor] = None
    packing: Optional[Packing] = None


@dataclass(frozen=True)
class TwoStream:
    """VECO's two streams over pairs stacked as ``tokens`` (2B, T): rows ``:B`` the x̂,
    rows ``B:`` the paired ŷ; the S stream of x attends to H^L of y and back.

    ``masked`` (2B, T): H-stream logits (eqs. 10-11, with ``need_h``) and S-stream
    logits (eqs. 12-13, with ``need_s``); ``features``: H^L and S^L themselves;
    ``stop_gradient``: H^L is a constant in the S stream (paper §2.2);
    ``masked_count``: see :data:`MASKED_COUNT`; ``packing``: several pairs to a row
    pair (:class:`Packing`); ``target``: as :class:`PlugOut`'s."""

    tokens: Tensor
    masked: Optional[Tensor] = None
    stop_gradient: bool = True
    need_h: bool = True
    need_s: bool = True
    features: bool = False
    masked_count: Optional[int] = None
    padded: bool = True
    packing: Optional[Packing] = None
    target: Optional[Tensor] = None


@dataclass(frozen=True)
class Embed:
    """Rows ``ids`` (N,) of the input embedding table."""

    ids: Tensor


Request = Union[PlugOut, SelfLabel, TwoStream, Embed]


Scores = Tuple[Tensor, Tensor]
"""The LM head's cross-entropy (M,) fp32 and correctness (M,) bool at the M masked
positions (``--fused-lm-loss``: :mod:`veco_plugin.modules.fused_cross_entropy`)."""


@dataclass(frozen=True)
class PointerOutput:
    """(B, W, W) log-probabilities x -> y (``forward``) and y -> x (``backward``), and
    the (B, W) word-piece masks of each side."""

    forward: Tensor
    backward: Tensor
    x_real: Tensor
    y_real: Tensor


@dataclass(frozen=True)
class PlugOutOutput:
    """``hidden`` {layer: (B, T, C)} of ``PlugOut.layers``; ``logits`` (M, V) at the M
    masked positions, row-major, or their ``scores`` (:data:`Scores`); ``pointer``;
    ``exchange_logits`` (M, V) at the same masked positions, x's rows then y's."""

    hidden: Dict[int, Tensor] = field(default_factory=dict)
    logits: Optional[Tensor] = None
    scores: Optional[Scores] = None
    pointer: Optional[PointerOutput] = None
    exchange_logits: Optional[Tensor] = None


@dataclass(frozen=True)
class SelfLabelOutput:
    hidden: Tensor  # (B, T, C)


@dataclass(frozen=True)
class TwoStreamOutput:
    """``h_logits`` / ``s_logits`` (M, V), x's rows before y's, or their
    ``h_scores`` / ``s_scores`` (:data:`Scores`); ``h`` / ``s`` (2B, T, C) = H^L and S^L."""

    h_logits: Optional[Tensor] = None
    s_logits: Optional[Tensor] = None
    h_scores: Optional[Scores] = None
    s_scores: Optional[Scores] = None
    h: Optional[Tensor] = None
    s: Optional[Tensor] = None


@dataclass(frozen=True)
class EmbedOutput:
    embeddings: Tensor  # (N, C)


Output = Union[PlugOutOutput, SelfLabelOutput, TwoStreamOutput, EmbedOutput]
