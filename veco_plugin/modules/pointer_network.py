"""XLM-Align's pointer network (Chi et al., 2021, eqs. 11-13), on the two halves of a
concatenated pair (``pair_layout.split_pair``): (B, W, ·) tensors."""

import math
from typing import Tuple

import torch
from torch import Tensor, nn


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
