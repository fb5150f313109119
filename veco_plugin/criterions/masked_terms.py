"""Shared bookkeeping for objectives that sum several masked-LM terms."""

import math
from typing import Dict, List

import torch.nn.functional as F
from fairseq import metrics
from fairseq.criterions import FairseqCriterion
from torch import Tensor


def masked_cross_entropy(logits: Tensor, target: Tensor) -> Dict[str, Tensor]:
    """Summed CE and accuracy of ``logits`` (M, V) against ``target`` (M,)."""
    loss = F.cross_entropy(logits.float(), target, reduction="sum")
    correct = (logits.argmax(-1) == target).sum()
    return {"loss": loss, "n": target.numel(), "correct": correct}


class MaskedTermsCriterion(FairseqCriterion):
    """Base of ``ca_mlm`` and ``tlm``: a sample is ``{"mono": batch, "bi": batch}``
    (either may be absent); subclasses add named terms per sub-batch in
    ``add_terms``. The loss is the weighted sum of the terms' summed token CE,
    normalised by the number of masked tokens (``sample_size``) exactly as
    fairseq's ``masked_lm``; every term is logged on its own (loss in bits per
    masked token, and accuracy)."""

    def add_terms(self, model, kind: str, batch: Dict, terms: Dict[str, Dict]) -> None:
        raise NotImplementedError

    def weight(self, term: str) -> float:
        raise NotImplementedError

    def forward(self, model, sample, reduce=True):
        terms: Dict[str, Dict] = {}
        sample_size = ntokens = nsentences = 0
        for kind, batch in sample.items():
            self.add_terms(model, kind, batch, terms)
            sample_size += int(batch["pair_target"].ne(self.padding_idx).sum())
            ntokens += batch["ntokens"]
            nsentences += batch["nsentences"]
        loss = sum(self.weight(name) * t["loss"] for name, t in terms.items())
        logging_output = {
            "loss": loss.data,
            "ntokens": ntokens,
            "nsentences": nsentences,
            "sample_size": sample_size,
        }
        for name, t in terms.items():
            logging_output[f"{name}_loss"] = t["loss"].data
            logging_output[f"{name}_n"] = t["n"]
            logging_output[f"{name}_correct"] = t["correct"].data
        return loss, sample_size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs: List[Dict]) -> None:
        def total(key):
            return sum(log.get(key, 0) for log in logging_outputs)

        sample_size = total("sample_size")
        metrics.log_scalar(
            "loss", total("loss") / max(sample_size, 1) / math.log(2), sample_size, round=3
        )
        names = sorted(
            {k[: -len("_loss")] for log in logging_outputs for k in log if k.endswith("_loss")}
        )
        for name in names:
            n = total(f"{name}_n")
            if n > 0:
                metrics.log_scalar(
                    f"{name}_loss", total(f"{name}_loss") / n / math.log(2), n, round=3
                )
                metrics.log_scalar(f"{name}_acc", 100.0 * total(f"{name}_correct") / n, n, round=2)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True


def targets_at(target: Tensor, pad: int):
    """Masked positions (bool, same shape) and their gold tokens (M,)."""
    masked = target.ne(pad)
    return masked, target[masked]


def tlm_term(model, batch: Dict, pad: int, reset_positions: bool) -> Dict[str, Tensor]:
    """Masked LM over the concatenated pair ``x̂ ‖ ŷ`` (XLM's TLM), ``concat_tokens`` (B, T)."""
    masked, gold = targets_at(batch["concat_target"], pad)
    logits = model.forward_concat(
        batch["concat_tokens"],
        first_lengths=batch["first_lengths"] if reset_positions else None,
        masked_tokens=masked,
    )
    return masked_cross_entropy(logits, gold)
