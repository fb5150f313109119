"""The vocabulary projection and its cross-entropy in one step, a chunk of rows at a time.

For M rows ``x`` (M, C) of the LM head (after its dense, activation and LayerNorm), the
projection ``z = x W^T + b`` (M, V) and, against gold ``t`` (M,),

    loss_i = logsumexp_v z_iv - z_{i t_i}                        (log-sum-exp in fp32)
    dloss_i / dz_iv = softmax(z_i)_v - [v = t_i]
    dx_i = sum_v g_iv W_v,   dW_v = sum_i g_iv x_i,   db_v = sum_i g_iv
    (g_iv = dL/dloss_i * dloss_i/dz_iv)

computed ``chunk`` rows at a time: the forward keeps only x, t and the M log-sum-exps, the
backward recomputes each chunk's logits. The (M, V) logits (and the fp32 copy a separate
cross-entropy makes of them) never exist whole: at V = 250k and M = 5k masked positions
they are 5 GB in fp32. ``correct`` (argmax = gold) comes from the same chunks.
"""

from typing import Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor

CHUNK = 1024
"""Rows a chunk: 1024 x 250k logits are 1 GB in fp32, about what fairseq's head holds for
M = 1024 positions anyway."""


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, target, chunk):
        losses, correct, lses = [], [], []
        for start in range(0, x.size(0), chunk):
            logits = F.linear(x[start : start + chunk], weight, bias).float()  # (m, V)
            lse = torch.logsumexp(logits, dim=-1)
            gold = target[start : start + chunk]
            losses.append(lse - logits.gather(1, gold[:, None]).squeeze(1))
            correct.append(logits.argmax(-1) == gold)
            lses.append(lse)
        ctx.save_for_backward(x, weight, bias, target, torch.cat(lses))
        ctx.chunk = chunk
        right = torch.cat(correct)
        ctx.mark_non_differentiable(right)
        return torch.cat(losses), right

    @staticmethod
    def backward(ctx, grad_loss, _grad_correct):
        x, weight, bias, target, lse = ctx.saved_tensors
        grad_x = torch.empty_like(x) if ctx.needs_input_grad[0] else None
        sum_weight = torch.zeros_like(weight, dtype=torch.float32)
        sum_bias = None if bias is None else torch.zeros_like(bias, dtype=torch.float32)
        for start in range(0, x.size(0), ctx.chunk):
            rows = slice(start, start + ctx.chunk)
            logits = F.linear(x[rows], weight, bias).float()
            g = torch.exp(logits - lse[rows, None])  # softmax (m, V)
            g.scatter_add_(1, target[rows, None], g.new_full((g.size(0), 1), -1.0))
            g.mul_(grad_loss[rows, None].float())
            if grad_x is not None:
                grad_x[rows] = (g.to(weight.dtype) @ weight).to(x.dtype)
            sum_weight.addmm_(g.t(), x[rows].float())
            if sum_bias is not None:
                sum_bias.add_(g.sum(0))
        grad_weight = sum_weight.to(weight.dtype) if ctx.needs_input_grad[1] else None
        grad_bias = None
        if sum_bias is not None and ctx.needs_input_grad[2]:
            grad_bias = sum_bias.to(bias.dtype)
        return grad_x, grad_weight, grad_bias, None, None


def linear_cross_entropy(
    x: Tensor, weight: Tensor, bias: Optional[Tensor], target: Tensor, chunk: int = CHUNK
) -> Tuple[Tensor, Tensor]:
    """Per-row cross-entropy (M,) fp32 of ``x W^T + b`` against ``target`` (M,), and
    whether each row's argmax is its target (M,) bool; ``x`` (M, C), ``weight`` (V, C),
    ``bias`` (V,) (see the module docstring)."""
    return _LinearCrossEntropy.apply(x, weight, bias, target, chunk)
