"""The layouts of a translation pair (x, y), and the moves between them.

* **Concatenated** (TLM, XLM-Align, WEAM): one row ``x ‖ y`` (B, Tx+Ty), each side
  ``<s> w_1 .. w_k </s>``, right-padded; ``first_lengths`` (B,) = |x| per row.
  :func:`split_pair` cuts it into two aligned halves (B, W, ...), :func:`word_positions`
  marks their word pieces, :func:`reset_positions` restarts positions at y (XLM).
* **Packed** (``veco_plugin.data.packing``): several pairs to a row, each a segment;
  :class:`Halves` finds each pair's two sides in a concatenated layout, padded or
  packed.
* **Stacked** (VECO's two streams): x and y as separate rows of one batch (2B, T), rows
  ``:B`` the x, rows ``B:`` their y (:func:`stack_pair`); :func:`swap_halves` pairs each
  row with its partner's (S_x attends to H^L_y).
"""

from dataclasses import dataclass
from typing import Dict, Tuple

import torch
from torch import Tensor


def split_pair(values: Tensor, first_lengths: Tensor, width: int) -> Tuple[Tensor, Tensor]:
    """The two halves of a concatenated pair.

    Args:
        values: (B, T, ...) anything laid out along the concatenation ``x ‖ y``
        first_lengths: (B,) ``|x|`` per row
        width: W with max(|x|, |y|) <= W <= T (the stacked-pair width: a shape, so
            no host sync)
    Returns:
        ``x`` part ``values[:, :W]`` and ``y`` part ``values[b, |x_b| + j]`` for
        ``j < W``, both (B, W, ...); positions past the concatenation's end repeat
        its last position (callers mask them).
    """
    total = values.size(1)
    steps = torch.arange(width, device=values.device)
    index = (first_lengths.unsqueeze(1) + steps).clamp(max=total - 1)  # (B, W)
    index = index.view(*index.shape, *([1] * (values.dim() - 2))).expand(-1, -1, *values.shape[2:])
    return values[:, :width], values.gather(1, index)


def word_positions(
    tokens: Tensor, first_lengths: Tensor, width: int, pad: int, bos: int, eos: int
) -> Tuple[Tensor, Tensor]:
    """Which positions of each half hold a word piece (not ``<s>``, ``</s>``, pad).

    Args:
        tokens: (B, T) the concatenation ``x ‖ y``, right-padded
    Returns:
        (B, W) bool masks of the ``x`` and ``y`` halves (see ``split_pair``).
    """
    halves = Halves.padded(first_lengths, tokens.ne(pad).sum(1), tokens.size(1), width)
    x, y = halves.pieces(tokens, pad, bos, eos)
    return x, y


def selected(values: Tensor, select: Tensor, count: int) -> Tensor:
    """``values[select]`` (count, ...) in row-major order, without a host sync.

    Boolean indexing waits for the device to learn the result's size, while ``count``
    (the number of True in ``select``, e.g. the rows of logits the LM head computed at
    those positions) is known on the host. A stable sort puts the selected positions
    first, in order.

    Args:
        values: (*S, ...) with ``select``'s shape S leading
        select: (*S) bool
    """
    order = torch.sort(select.flatten().logical_not().to(torch.uint8), stable=True).indices
    return values.flatten(0, select.dim() - 1)[order[:count]]


def reset_positions(tokens: Tensor, first_lengths: Tensor, padding_idx: int) -> Tensor:
    """XLM-style positions for a concatenated pair: the second segment restarts.

    Args:
        tokens: (B, T) concatenation ``x ‖ y`` right-padded
        first_lengths: (B,) length of ``x`` in each row
    Returns:
        (B, T) positions with fairseq's padding offset; pads get ``padding_idx``.
    """
    steps = torch.arange(tokens.size(1), device=tokens.device).unsqueeze(0)
    first = first_lengths.unsqueeze(1)
    pos = torch.where(steps < first, steps, steps - first) + padding_idx + 1
    return pos.masked_fill(tokens.eq(padding_idx), padding_idx)


def stack_pair(x: Tensor, y: Tensor, pad: int) -> Tensor:
    """x (B, T1), y (B, T2) right-padded -> (2B, max(T1, T2)): rows ``:B`` x, ``B:`` y
    (the ``two_stream`` layout)."""
    width = max(x.size(1), y.size(1))
    out = x.new_full((2 * x.size(0), width), pad)
    out[: x.size(0), : x.size(1)] = x
    out[x.size(0) :, : y.size(1)] = y
    return out


def swap_halves(x: Tensor, dim: int) -> Tensor:
    """[a; b] -> [b; a] along ``dim`` (whose size is even)."""
    first, second = x.chunk(2, dim=dim)
    return torch.cat([second, first], dim=dim)


@dataclass(frozen=True)
class Halves:
    """Where the sides of each of B pairs lie in a concatenated layout (R, T), padded
    (one pair a row) or packed (several: ``veco_plugin.data.packing``).

    ``index`` (2, B, W) long: ``index[0, b, j]`` the flat position ``row * T + column``
    of x_b's j-th token, ``index[1, b, j]`` y_b's, for j < |side|; past a side's end
    some position of the same row (callers mask by :meth:`real`). ``lengths`` (2, B):
    |x_b|, |y_b|. W is at least every side's length (the stacked-pair width)."""

    index: Tensor
    lengths: Tensor

    @classmethod
    def of(cls, batch: Dict) -> "Halves":
        """A collated bilingual batch's (``halves``, ``half_lengths``)."""
        return cls(batch["halves"], batch["half_lengths"])

    @classmethod
    def padded(cls, first_lengths: Tensor, lengths: Tensor, total: int, width: int) -> "Halves":
        """One pair a row, ``x ‖ y`` right-padded to ``total``: |x| = ``first_lengths``
        (B,), |x| + |y| = ``lengths`` (B,); the halves of :func:`split_pair`."""
        steps = torch.arange(width, device=first_lengths.device)
        rows = torch.arange(first_lengths.size(0), device=first_lengths.device).unsqueeze(1)
        x = rows * total + steps.clamp(max=total - 1)
        y = rows * total + (first_lengths.unsqueeze(1) + steps).clamp(max=total - 1)
        return cls(torch.stack([x, y]), torch.stack([first_lengths, lengths - first_lengths]))

    @property
    def width(self) -> int:
        return self.index.size(2)

    def gather(self, values: Tensor) -> Tensor:
        """``values`` (R, T, ...) laid out as the concatenation -> (2, B, W, ...): the x
        halves, then the y halves."""
        return values.flatten(0, 1)[self.index]

    def real(self) -> Tensor:
        """(2, B, W) bool: position j lies within its side."""
        steps = torch.arange(self.width, device=self.index.device)
        return steps < self.lengths.unsqueeze(-1)

    def mask(self, mask: Tensor) -> Tensor:
        """A bool (R, T) mask over the concatenation, as (2, B, W) halves: each position
        of a pair in exactly one half, False past the sides (as many True as ``mask``
        holds over the pairs)."""
        return self.gather(mask) & self.real()

    def pieces(self, tokens: Tensor, pad: int, bos: int, eos: int) -> Tensor:
        """(2, B, W) bool: which positions of each half hold a word piece (not ``<s>``,
        ``</s>``, pad) of the concatenation ``tokens`` (R, T)."""
        return self.mask(tokens.ne(pad) & tokens.ne(bos) & tokens.ne(eos))
