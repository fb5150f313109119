"""Cross-entropy bookkeeping shared by the token-prediction terms."""

from typing import Any, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor

from ..modules.pair_layout import selected


def token_scores(logits: Tensor, target: Tensor) -> Tuple[Tensor, Tensor]:
    """Per-token CE (M,) and correctness (M,) of ``logits`` (M, V) against ``target`` (M,)."""
    return F.cross_entropy(logits.float(), target, reduction="none"), logits.argmax(-1) == target


def summed(loss: Tensor, correct: Tensor, select: Optional[Tensor] = None) -> Dict[str, Any]:
    """A token term: summed CE, count and correct predictions over the positions where
    ``select`` (M,) bool is True (all if None). No host sync."""
    if select is None:
        return {"loss": loss.sum(), "n": loss.numel(), "correct": correct.sum()}
    return {"loss": (loss * select).sum(), "n": select.sum(), "correct": (correct & select).sum()}


def head_scores(
    logits: Optional[Tensor], scores: Optional[Tuple[Tensor, Tensor]], target: Tensor, pad: int
) -> Tuple[Tensor, Tensor, Tensor]:
    """The masked positions of ``target`` (bool, its shape), and the LM head's per-token
    CE and correctness (M,) there: the ``scores`` the model computed (``--fused-lm-loss``),
    else those of its ``logits`` (M, V)."""
    count = scores[0].size(0) if scores is not None else logits.size(0)  # type: ignore
    masked, gold = targets_at(target, pad, count)
    loss, correct = scores if scores is not None else token_scores(logits, gold)  # type: ignore
    return masked, loss, correct


def targets_at(target: Tensor, pad: int, count: int) -> Tuple[Tensor, Tensor]:
    """Masked positions (bool, same shape) and their ``count`` gold tokens (M,),
    row-major, as the LM head orders its logits (see ``selected``)."""
    masked = target.ne(pad)
    return masked, selected(target, masked, count)


def logged_totals(logging_outputs: List[Dict]) -> Dict[str, float]:
    """Every key summed over the workers' logging outputs, as Python numbers, the tensors
    among them brought to the host in one transfer (one wait for the device per update,
    where a ``.item()`` per key waited once per key: 27 for ``ca_mlm``). Counts stay
    exact (float64 holds integers up to 2**53)."""
    keys = {k for log in logging_outputs for k in log}
    sums = {k: sum(log.get(k, 0) for log in logging_outputs) for k in keys}
    tensors = sorted(k for k, v in sums.items() if torch.is_tensor(v))
    if tensors:
        values = torch.stack([sums[k].detach().reshape(()).double() for k in tensors]).tolist()
        for k, value in zip(tensors, values):
            sums[k] = int(value) if not sums[k].is_floating_point() else value
    return sums


def logged_total(logging_outputs: List[Dict], key: str) -> float:
    """``key`` summed over the workers' logging outputs, as a Python number."""
    value = sum(log.get(key, 0) for log in logging_outputs)
    return value.item() if torch.is_tensor(value) else value
