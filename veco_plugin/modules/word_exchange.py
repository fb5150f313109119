"""WEAM's word exchange (Yang et al., WEAM, §2.2, eqs. 5-7): aligned words swap representations.

With the alignment set d(s, t) of a pair, the binary matrix over the m positions of
``[CLS] S [SEP] T [SEP]``

    A(i, j) = 1 if (i, j) or (j, i) in d, else 0

is off-diagonal and symmetric, so ``H' = A^T H`` (eq. 5) gives every source position the
sum of the representations of the target positions linked to it, and vice versa. Here
the pair is held as two halves ``x`` (source) and ``y`` (target) of width W (see
``pair_layout.split_pair``) and A as its off-diagonal block ``links`` (B, W, W)
(``links[b, i, j]``: x position i linked to y position j), so eq. 5 reads

    x'[b, i] = sum_j links[b, i, j] y[b, j]        y'[b, j] = sum_i links[b, i, j] x[b, i]

unnormalized, as in the paper: a position linked to several partners reads their sum,
an unlinked one reads zeros.
"""

from typing import Tuple

import torch
from torch import Tensor, nn
from torch.nn import functional as F


def exchange(x: Tensor, y: Tensor, links: Tensor) -> Tuple[Tensor, Tensor]:
    """H' = A^T H (eq. 5) on the two halves of a pair.

    Args:
        x: (B, W, C) source-side representations
        y: (B, W, C) target-side representations
        links: (B, W, W) bool, ``links[b, i, j]``: x position i is linked to y position j
    Returns:
        ``x'`` (B, W, C) with ``x'[b, i] = sum_j links[b, i, j] y[b, j]`` and ``y'`` (B, W, C)
        with ``y'[b, j] = sum_i links[b, i, j] x[b, i]``, in the dtype of ``x``.
    """
    a = links.to(x.dtype)  # (B, W, W), exact 0/1 in any float dtype
    return torch.bmm(a, y), torch.bmm(a.transpose(1, 2), x)


class VecoWordExchangeHead(nn.Module):
    """The cross-lingual prediction head before the LM output (eqs. 6-7).

    ``H~ = W_2 H' + b_2`` (eq. 6), then ``H~' = GELU(W_3 H~ + b_3)`` (eq. 7's dense
    layer); the model's LM-head layer norm and tied output projection (eq. 8) follow.
    """

    def __init__(self, dim: int):
        super().__init__()
        self.exchange_proj = nn.Linear(dim, dim)  # W_2, b_2
        self.dense = nn.Linear(dim, dim)  # W_3, b_3

    def forward(self, exchanged: Tensor) -> Tensor:
        """
        Args:
            exchanged: (..., C) H', the output of :func:`exchange`
        Returns:
            (..., C) H~' of eq. 7
        """
        return F.gelu(self.dense(self.exchange_proj(exchanged)))
