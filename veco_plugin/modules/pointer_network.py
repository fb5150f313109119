"""XLM-Align's pointer network (Chi et al., 2021, eqs. 11-13) and the pair layout it reads.

A translation pair is encoded as one concatenated sequence ``x ‖ y`` (TLM input), each
side ``<s> w_1 .. w_k </s>``. ``split_pair`` cuts a batch of such sequences back into two
aligned, right-padded halves so that both directions of the pointer network (and the
self-labelling of ``veco_plugin.alignment``) work on ``(B, W, ·)`` tensors.
"""

import math
from typing import Tuple

import torch
from torch import Tensor, nn


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
    piece = tokens.ne(pad) & tokens.ne(bos) & tokens.ne(eos)
    x_piece, y_piece = split_pair(piece, first_lengths, width)
    steps = torch.arange(width, device=tokens.device).unsqueeze(0)
    first = first_lengths.unsqueeze(1)
    second = tokens.ne(pad).sum(1, keepdim=True) - first
    return x_piece & (steps < first), y_piece & (steps < second)


class VecoPointerNetwork(nn.Module):
    """Alignment probabilities from the hidden states of a concatenated pair.

    a_i = softmax(q_i^T K / sqrt(d_h)), q_i = W_q h_i, K = W_k [h of the other side]
    (eqs. 11-13), for source queries over target keys (forward) and target queries
    over source keys (backward), with the same projections.
    """

    def __init__(self, dim: int):
        super().__init__()
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.scale = 1.0 / math.sqrt(dim)

    def forward(
        self, x: Tensor, y: Tensor, x_real: Tensor, y_real: Tensor
    ) -> Tuple[Tensor, Tensor]:
        """
        Args:
            x, y: (B, W, C) hidden states of the two halves
            x_real, y_real: (B, W) bool, positions that may be pointed at
        Returns:
            ``forward`` (B, W, W) log a_ij over y's positions for each x query, and
            ``backward`` (B, W, W) log a_ji over x's positions for each y query
            (float32; keys that are not real get -inf).
        """
        qx, qy = self.q_proj(x), self.q_proj(y)
        kx, ky = self.k_proj(x), self.k_proj(y)
        forward = torch.bmm(qx, ky.transpose(1, 2)).float() * self.scale
        backward = torch.bmm(qy, kx.transpose(1, 2)).float() * self.scale
        forward = forward.masked_fill(~y_real.unsqueeze(1), float("-inf"))
        backward = backward.masked_fill(~x_real.unsqueeze(1), float("-inf"))
        return forward.log_softmax(-1), backward.log_softmax(-1)
