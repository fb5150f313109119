"""Alignment extraction and iterative filtering of XLM-Align (Chi et al., 2021, §3.1).

From the transport plan A* (eqs. 4-6):

    forward  = {(i, j) | j = argmax_k A*_ik},  backward = {(i, j) | i = argmax_k A*_kj}   (eq. 7)
    links <- links U (forward n backward)                                              (eq. 8)
    A*_ij <- 0             if (i, j) in links
             alpha A*_ij   if exists k: (i, k) in links or (k, j) in links
             A*_ij         otherwise                                                   (eq. 9)

starting from links = {} and repeating eqs. 7-9 (the paper follows Itermax, Jalili Sabet et al.,
2020). One reading choice: a cell whose row AND column both already hold links is zeroed and can
not become a link (``discount_aligned_pairs=False``, the default), as in Itermax, where only a
pair with at least one still-unaligned side may be added. Read literally, eq. 9 would only
discount such a cell by alpha; then every later iteration adds the largest remaining cell as a
low-confidence link even when every token is already aligned (``discount_aligned_pairs=True``).

A cell of A equal to 0 never becomes a link. Within one iteration a row (column) receives at most
one new link: ``forward`` has one link per row, ``backward`` one per column, and ``argmax``
returns one index even among ties. All functions are batched over padded pairs, host-sync free.
"""

from typing import Tuple

import torch
from torch import Tensor

from .sinkhorn import similarity, sinkhorn

__all__ = ["argmax_links", "itermax", "itermax_step", "self_label"]


def _valid(src_mask: Tensor, tgt_mask: Tensor) -> Tensor:
    """(B, n), (B, m) -> (B, n, m) bool: both the row and the column are real tokens."""
    return src_mask[:, :, None] & tgt_mask[:, None, :]


def argmax_links(A: Tensor, src_mask: Tensor, tgt_mask: Tensor) -> Tuple[Tensor, Tensor]:
    """Eq. 7: forward (row-wise) and backward (column-wise) argmax alignments.

    Args:
        A: (B, n, m) alignment scores, e.g. from :func:`~.sinkhorn.sinkhorn`.
        src_mask: (B, n) bool, True = a real source token.
        tgt_mask: (B, m) bool, True = a real target token.

    Returns:
        ``(forward, backward)``, both (B, n, m) bool. ``forward`` holds one link per real row,
        at its argmax over the real columns; ``backward`` one link per real column, at its
        argmax over the real rows. Padding, and a row (column) without any real column (row),
        get no link.
    """
    valid = _valid(src_mask, tgt_mask)  # (B, n, m)
    scores = A.float().masked_fill(~valid, float("-inf"))
    forward = torch.zeros_like(valid).scatter_(2, scores.argmax(dim=2, keepdim=True), True)
    backward = torch.zeros_like(valid).scatter_(1, scores.argmax(dim=1, keepdim=True), True)
    return forward & valid, backward & valid


def itermax_step(
    A: Tensor,
    links: Tensor,
    src_mask: Tensor,
    tgt_mask: Tensor,
    alpha: float = 0.9,
    discount_aligned_pairs: bool = False,
) -> Tuple[Tensor, Tensor]:
    """One filtering iteration: eqs. 7 and 8 on the current A, then the update of eq. 9.

    Args:
        A: (B, n, m) current scores (already updated by the previous iterations).
        links: (B, n, m) bool links found so far.
        src_mask: (B, n) bool, True = a real source token.
        tgt_mask: (B, m) bool, True = a real target token.
        alpha: discount factor of eq. 9.
        discount_aligned_pairs: see the module docstring; False zeroes the cells whose row and
            column both hold links (Itermax), True discounts them by alpha (eq. 9 read literally).

    Returns:
        ``(links, A)``: (B, n, m) bool links after eq. 8 and (B, n, m) float32 A after eq. 9.
    """
    A = A.float()
    forward, backward = argmax_links(A, src_mask, tgt_mask)
    links = links | (forward & backward & (A > 0))  # eq. 8
    row_linked = links.any(dim=2, keepdim=True)  # (B, n, 1)
    col_linked = links.any(dim=1, keepdim=True)  # (B, 1, m)
    if discount_aligned_pairs:
        dead = links
    else:
        dead = links | (row_linked & col_linked)
    discounted = row_linked | col_linked
    A = torch.where(discounted, alpha * A, A).masked_fill(dead, 0.0)  # eq. 9
    return links, A


def itermax(
    A: Tensor,
    src_mask: Tensor,
    tgt_mask: Tensor,
    iterations: int = 2,
    alpha: float = 0.9,
    discount_aligned_pairs: bool = False,
) -> Tensor:
    """Eqs. 7-9: iterative alignment filtering, starting from no links.

    Args:
        A: (B, n, m) transport plan A* (eq. 4); not modified in place.
        src_mask: (B, n) bool, True = a real source token.
        tgt_mask: (B, m) bool, True = a real target token.
        iterations: filtering iterations; Table 11 uses 2.
        alpha: discount factor of eq. 9; Table 11 uses 0.9.
        discount_aligned_pairs: see :func:`itermax_step`.

    Returns:
        (B, n, m) bool links, only between real tokens.
    """
    links = torch.zeros_like(_valid(src_mask, tgt_mask))  # (B, n, m): links = {}
    for _ in range(iterations):
        links, A = itermax_step(A, links, src_mask, tgt_mask, alpha, discount_aligned_pairs)
    return links


@torch.no_grad()
def self_label(
    src_h: Tensor,
    tgt_h: Tensor,
    src_mask: Tensor,
    tgt_mask: Tensor,
    mu: float = 1.0,
    sinkhorn_iterations: int = 2,
    filter_iterations: int = 2,
    alpha: float = 0.9,
    eps: float = 1e-6,
    discount_aligned_pairs: bool = False,
) -> Tensor:
    """Word alignment self-labelling (§3.1): eq. 1, Sinkhorn (eqs. 3-6), then eqs. 7-9.

    Args:
        src_h: (B, n, C) source hidden states (any float dtype).
        tgt_h: (B, m, C) target hidden states.
        src_mask: (B, n) bool, True = a real source token.
        tgt_mask: (B, m) bool, True = a real target token.
        mu, sinkhorn_iterations: see :func:`~.sinkhorn.sinkhorn` (Table 11: 1.0, 2).
        filter_iterations, alpha: see :func:`itermax` (Table 11: 2, 0.9).
        eps: floor of the dot product in eq. 1.
        discount_aligned_pairs: see :func:`itermax_step`.

    Returns:
        (B, n, m) bool self-labelled links between real source and target tokens.
    """
    f_sim = similarity(src_h, tgt_h, eps)
    A = sinkhorn(f_sim, src_mask, tgt_mask, mu, sinkhorn_iterations)
    return itermax(A, src_mask, tgt_mask, filter_iterations, alpha, discount_aligned_pairs)
