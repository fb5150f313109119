"""The criterion every objective is: a recipe of weighted loss terms (``veco_plugin.terms``)."""

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List

from fairseq import metrics
from fairseq.criterions import FairseqCriterion
from fairseq.dataclass import FairseqDataclass
from omegaconf import II

from ..errors import VecoUserError
from ..terms import TERM_FAMILIES, VecoTerm
from ..terms.scores import logged_total
from ..terms.translation_lm import TlmSettings


@dataclass
class DdpSettings(FairseqDataclass):
    """fairseq's data-parallel settings, read to refuse what DDP would crash on."""

    ddp_backend: str = II("distributed_training.ddp_backend")
    find_unused_parameters: bool = II("distributed_training.find_unused_parameters")
    distributed_world_size: int = II("distributed_training.distributed_world_size")


def refuse_idle_parameters(cfg: DdpSettings, who: str, idle: str) -> None:
    """``who`` (a flag) leaves ``idle`` without gradient: torch's DistributedDataParallel
    (``--ddp-backend pytorch_ddp``/``c10d``, more than one process) raises at the second
    update unless ``--find-unused-parameters``; refuse that up front, in one line."""
    if (
        cfg.distributed_world_size > 1
        and cfg.ddp_backend in ("pytorch_ddp", "c10d")
        and not cfg.find_unused_parameters
    ):
        raise VecoUserError(
            f"{who} leaves {idle} idle, which --ddp-backend {cfg.ddp_backend} refuses: "
            "add --find-unused-parameters (or use legacy_ddp)"
        )


@dataclass
class MaskedTermsConfig(TlmSettings, DdpSettings):
    """The settings every recipe has."""

    mlm_weight: float = field(
        default=1.0, metadata={"help": "weight of MLM on monolingual batches; 0 disables"}
    )
    tlm_weight: float = field(
        default=1.0, metadata={"help": "weight of TLM on bilingual batches; 0 disables"}
    )


class MaskedTermsCriterion(FairseqCriterion):
    """Base of every objective: a sample is ``{"mono": batch, "bi": batch}`` (either
    may be absent); ``term_weights(cfg)`` is the recipe, an explicit map from term
    keys (``veco_plugin.terms.TERM_KEYS``) to weights.

    The families of the non-zero terms add their requests, the model is called
    **once** per step with all of them (its ``forward`` is what fairseq's DDP
    wrappers synchronize), then the families turn the outputs into logged terms.
    The loss is Σ weight[key] * term loss, normalised by the number of masked tokens
    (``sample_size``) exactly as fairseq's ``masked_lm``; every token term is logged
    on its own (loss in bits per predicted token, and accuracy). Built from the
    criterion's dataclass config (``cfg``), as fairseq-train builds it.

    ``extensions`` (model parts its terms need; the task builds them into the model)
    and ``needs_warm_start`` (the task warns when training starts from random
    weights) follow from the recipe."""

    def __init__(self, cfg: Any, task):
        super().__init__(task)
        self.cfg = cfg
        self.weights: Dict[str, float] = self.term_weights(cfg)
        self.terms: List[VecoTerm] = [
            family(cfg, task, self.weights)
            for family in TERM_FAMILIES
            if any(self.weights.get(key, 0.0) for key in family.keys)
        ]
        self.extensions = tuple(e for term in self.terms for e in term.extensions)
        self.needs_warm_start = any(term.warm_start for term in self.terms)
        self._check_ddp(cfg)

    def _check_ddp(self, cfg: Any) -> None:
        """Without a cross term (``mono_ca``/``bi_ca``) the cross-attention gets no
        gradient."""
        if not any(self.weights.get(k, 0.0) for k in ("mono_ca", "bi_ca")):
            refuse_idle_parameters(cfg, f"--criterion {cfg._name}", "the cross-attention")

    @staticmethod
    def term_weights(cfg: Any) -> Dict[str, float]:
        """Every term the objective can produce -> its weight in the loss."""
        raise NotImplementedError

    def extend_model(self, model) -> None:
        """Build the model parts this recipe's terms need (before the optimizer)."""
        for name in self.extensions:
            model.build_extension(name)

    def forward(self, model, sample, reduce=True):
        for term in self.terms:
            term.prepare(model)
        requests: Dict[str, Dict[str, Any]] = {}
        for kind, batch in sample.items():
            for term in self.terms:
                term.requests(kind, batch, requests)
        for term in self.terms:
            term.shared_requests(requests)
        outputs = model(requests=requests)
        terms: Dict[str, Dict] = {}
        sample_size: Any = 0
        ntokens = nsentences = 0
        for kind, batch in sample.items():
            for term in self.terms:
                term.add(kind, batch, outputs, terms)
            sample_size = sample_size + batch["pair_target"].ne(self.padding_idx).sum()
            ntokens += batch["ntokens"]
            nsentences += batch["nsentences"]
        for term in self.terms:
            term.add_shared(outputs, sample_size, terms)
        loss = sum(self.weights[t["key"]] * t["loss"] for t in terms.values())
        logging_output = {
            "loss": loss.data,
            "ntokens": ntokens,
            "nsentences": nsentences,
            "sample_size": sample_size,
        }
        for name, t in terms.items():
            if "n" in t:
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
        for family in TERM_FAMILIES:
            family.reduce_metrics(logging_outputs)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
