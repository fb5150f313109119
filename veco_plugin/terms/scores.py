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


def masked_cross_entropy(logits: Tensor, target: Tensor) -> Dict[str, Any]:
    """The token term of ``logits`` (M, V) against ``target`` (M,)."""
    return summed(*token_scores(logits, target))


def targets_at(target: Tensor, pad: int, count: int) -> Tuple[Tensor, Tensor]:
    """Masked positions (bool, same shape) and their ``count`` gold tokens (M,),
    row-major, as the LM head orders its logits (see ``selected``)."""
    masked = target.ne(pad)
    return masked, selected(target, masked, count)


def logged_total(logging_outputs: List[Dict], key: str) -> float:
    """``key`` summed over the workers' logging outputs, as a Python number."""
    value = sum(log.get(key, 0) for log in logging_outputs)
    return value.item() if torch.is_tensor(value) else value
