"""Shared bookkeeping for objectives that sum several masked-LM terms."""

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from fairseq import metrics
from fairseq.criterions import FairseqCriterion
from fairseq.dataclass import FairseqDataclass
from torch import Tensor


@dataclass
class MaskedTermsConfig(FairseqDataclass):
    """The settings every masked-terms objective has."""

    mlm_weight: float = field(
        default=1.0, metadata={"help": "weight of MLM on monolingual batches; 0 disables"}
    )
    tlm_weight: float = field(
        default=1.0, metadata={"help": "weight of TLM on bilingual batches; 0 disables"}
    )
    tlm_reset_positions: bool = field(
        default=False,
        metadata={
            "help": "restart positions at the second sentence of TLM (XLM); default: "
            "continuous (VECO)"
        },
    )


def token_scores(logits: Tensor, target: Tensor) -> Tuple[Tensor, Tensor]:
    """Per-token CE (M,) and correctness (M,) of ``logits`` (M, V) against ``target`` (M,)."""
    return F.cross_entropy(logits.float(), target, reduction="none"), logits.argmax(-1) == target


def summed(loss: Tensor, correct: Tensor, select: Optional[Tensor] = None) -> Dict[str, Any]:
    """A term: summed CE, count and correct predictions over the positions where
    ``select`` (M,) bool is True (all if None). No host sync."""
    if select is None:
        return {"loss": loss.sum(), "n": loss.numel(), "correct": correct.sum()}
    return {"loss": (loss * select).sum(), "n": select.sum(), "correct": (correct & select).sum()}


def logged_total(logging_outputs: List[Dict], key: str) -> float:
    """``key`` summed over the workers' logging outputs, as a Python number."""
    value = sum(log.get(key, 0) for log in logging_outputs)
    return value.item() if torch.is_tensor(value) else value


def masked_cross_entropy(logits: Tensor, target: Tensor) -> Dict[str, Any]:
    """The term of ``logits`` (M, V) against ``target`` (M,)."""
    return summed(*token_scores(logits, target))


class MaskedTermsCriterion(FairseqCriterion):
    """Base of ``ca_mlm``, ``tlm`` and ``dwa``: a sample is ``{"mono": batch, "bi": batch}``
    (either may be absent).

    Subclasses say what each sub-batch needs from the model (``requests``); the
    model is called **once** per step with all of them (its ``forward`` is what
    fairseq's DDP wrappers synchronize), then ``add_terms`` turns the outputs into
    named terms. A term is ``{"loss", "n", "correct"}`` and optionally ``"counts"``:
    summable counters logged as they are (reduced by the subclass). The loss is the
    weighted sum of the terms' summed token CE, weighted by the explicit map
    ``term_weights(cfg)`` (term name -> weight), normalised by the number of masked
    tokens (``sample_size``) exactly as fairseq's ``masked_lm``; every term is logged
    on its own (loss in bits per masked token, and accuracy). Built from the
    criterion's dataclass config (``cfg``), as fairseq-train builds it."""

    uses_pointer_network = False  # the task builds XLM-Align's pointer network into the model
    needs_warm_start = False  # the task warns when training starts from random weights

    def __init__(self, cfg: MaskedTermsConfig, task):
        super().__init__(task)
        self.cfg = cfg
        self.weights: Dict[str, float] = self.term_weights(cfg)

    @staticmethod
    def term_weights(cfg: Any) -> Dict[str, float]:
        """Every term the objective can produce -> its weight in the loss."""
        raise NotImplementedError

    def requests(self, kind: str, batch: Dict) -> Dict[str, Dict[str, Any]]:
        """Model requests (see ``VecoModel.forward``) for sub-batch ``kind``; their
        names must be unique across kinds."""
        raise NotImplementedError

    def add_terms(self, kind: str, batch: Dict, outputs: Dict, terms: Dict[str, Dict]) -> None:
        raise NotImplementedError

    def forward(self, model, sample, reduce=True):
        requests: Dict[str, Dict[str, Any]] = {}
        for kind, batch in sample.items():
            requests.update(self.requests(kind, batch))
        outputs = model(requests=requests)
        terms: Dict[str, Dict] = {}
        sample_size: Any = 0
        ntokens = nsentences = 0
        for kind, batch in sample.items():
            self.add_terms(kind, batch, outputs, terms)
            sample_size = sample_size + batch["pair_target"].ne(self.padding_idx).sum()
            ntokens += batch["ntokens"]
            nsentences += batch["nsentences"]
        loss = sum(self.weights[name] * t["loss"] for name, t in terms.items())
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
            logging_output.update(t.get("counts", {}))
        return loss, sample_size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs: List[Dict]) -> None:
        def total(key):
            return logged_total(logging_outputs, key)

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


def mlm_request(batch: Dict, pad: int) -> Dict[str, Any]:
    """Masked LM over each segment on its own, ``pair_tokens`` (B, T)."""
    return {
        "mode": "plug_out",
        "tokens": batch["pair_tokens"],
        "masked": batch["pair_target"].ne(pad),
    }


def mlm_term(batch: Dict, output: Dict, pad: int) -> Dict[str, Any]:
    """The term of ``mlm_request``'s output."""
    _, gold = targets_at(batch["pair_target"], pad)
    return masked_cross_entropy(output["logits"], gold)


def tlm_request(batch: Dict, pad: int, reset_positions: bool) -> Dict[str, Any]:
    """Masked LM over the concatenated pair ``x̂ ‖ ŷ`` (XLM's TLM), ``concat_tokens`` (B, T)."""
    return {
        "mode": "plug_out",
        "tokens": batch["concat_tokens"],
        "masked": batch["concat_target"].ne(pad),
        "first_lengths": batch["first_lengths"] if reset_positions else None,
    }


def tlm_term(batch: Dict, outputs: Dict, pad: int) -> Dict[str, Any]:
    _, gold = targets_at(batch["concat_target"], pad)
    return masked_cross_entropy(outputs["logits"], gold)
