"""Similarity and entropic optimal transport of XLM-Align (Chi et al., 2021, §3.1).

A translation pair S = s_1..s_n, T = t_1..t_m is aligned by a matrix A in R_+^{n x m}:

    f_sim(s_i, t_j) = log max(eps, h_i . h_j)                                  (eq. 1)
    max_A  sum_ij A_ij f_sim(s_i, t_j) - mu A_ij log A_ij                      (eq. 3)
    A* = diag(u) K diag(v),   K_ij = exp(f_sim(s_i, t_j) / mu)                 (eqs. 4-5)
    u^{t+1} = 1_n / (K v^t),  v^{t+1} = 1_m / (K^T u^{t+1}),  v^0 = 1_m        (eq. 6)

Sinkhorn runs in log space (log u, log v, log K and ``logsumexp``), so a small ``mu`` or a long
sentence neither overflows K nor underflows the marginals. Everything is batched over padded
pairs with boolean masks (True = a real token) and computed in float32 whatever the input dtype.
"""

import torch
from torch import Tensor

__all__ = ["similarity", "sinkhorn"]


def similarity(src: Tensor, tgt: Tensor, eps: float = 1e-6) -> Tensor:
    """Eq. 1: the log of the clamped dot product of every source/target pair.

    Args:
        src: (B, n, C) source hidden states h_1..h_n (any float dtype).
        tgt: (B, m, C) target hidden states.
        eps: floor of the dot product, so that the log stays finite.

    Returns:
        (B, n, m) float32 ``f_sim``, at least ``log(eps)`` everywhere.
    """
    # (B, n, C) x (B, C, m) -> (B, n, m); float32 so fp16 dot products cannot overflow.
    dots = torch.bmm(src.float(), tgt.float().transpose(1, 2))
    return dots.clamp_min(eps).log()


def sinkhorn(
    f_sim: Tensor,
    src_mask: Tensor,
    tgt_mask: Tensor,
    mu: float = 1.0,
    iterations: int = 2,
) -> Tensor:
    """Eqs. 3-6: ``iterations`` Sinkhorn steps, then A = diag(u) K diag(v) (eq. 4).

    Each step updates u first and v last (eq. 6), so after any number of steps every real
    column of A sums to 1; the rows sum to 1 only at convergence and only when n == m.

    Args:
        f_sim: (B, n, m) similarities (eq. 1), e.g. from :func:`similarity`.
        src_mask: (B, n) bool, True = a real source token.
        tgt_mask: (B, m) bool, True = a real target token.
        mu: entropic regularisation (eq. 3); Table 11 uses 1.0.
        iterations: Sinkhorn steps (eq. 6); Table 11 uses 2.

    Returns:
        (B, n, m) float32 transport plan A, exactly 0 wherever the row or the column is padding.
    """
    valid = src_mask[:, :, None] & tgt_mask[:, None, :]  # (B, n, m)
    row_real = valid.any(dim=2)  # (B, n): a real row with at least one real column
    col_real = valid.any(dim=1)  # (B, m)
    # log K (eq. 5); padding gets the most negative finite float rather than -inf, so that a
    # fully padded row gives a finite logsumexp (and finite gradients) instead of nan.
    log_k = (f_sim.float() / mu).masked_fill(~valid, torch.finfo(torch.float32).min)
    log_u = log_k.new_zeros(log_k.shape[:2])  # (B, n)
    log_v = log_k.new_zeros(log_k.shape[0], log_k.shape[2])  # (B, m): v^0 = 1_m
    for _ in range(iterations):
        # u = 1 / (K v): log u_i = -logsumexp_j(log K_ij + log v_j)
        log_u = -torch.logsumexp(log_k + log_v[:, None, :], dim=2)
        log_u = torch.where(row_real, log_u, torch.zeros_like(log_u))
        # v = 1 / (K^T u): log v_j = -logsumexp_i(log K_ij + log u_i)
        log_v = -torch.logsumexp(log_k + log_u[:, :, None], dim=1)
        log_v = torch.where(col_real, log_v, torch.zeros_like(log_v))
    log_a = log_u[:, :, None] + log_k + log_v[:, None, :]  # eq. 4 in log space
    return log_a.exp().masked_fill(~valid, 0.0)
