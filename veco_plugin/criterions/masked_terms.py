"""The criterion every objective is: a recipe of weighted loss terms (``veco_plugin.terms``)."""

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Type

import torch
from fairseq import metrics
from fairseq.criterions import FairseqCriterion
from fairseq.dataclass import FairseqDataclass
from omegaconf import II

from ..errors import VecoUserError
from ..models.requests import Request
from ..terms import TERM_FAMILIES, VecoTerm, check_weight, kind_of
from ..terms.base import inner_model
from ..terms.scores import logged_totals
from ..terms.translation_lm import TlmSettings


@dataclass
class DdpSettings(FairseqDataclass):
    """fairseq's data-parallel settings, read to refuse what DDP would crash on."""

    ddp_backend: str = II("distributed_training.ddp_backend")
    find_unused_parameters: bool = II("distributed_training.find_unused_parameters")
    distributed_world_size: int = II("distributed_training.distributed_world_size")


# sub-batch kind -> (what it is, the task flag that gives it, an example value)
_DATA = {
    "mono": ("monolingual", "--mono-langs", "LANG[,LANG...]"),
    "bi": ("bilingual", "--bi-pairs", "SRC-TGT[,SRC-TGT...]"),
}


def _weight_flags(cfg: Any) -> Dict[str, float]:
    """A recipe's weight settings: ``--mlm-weight`` -> value (its ``*_weight`` fields)."""
    names = cfg.keys() if hasattr(cfg, "keys") else [f.name for f in dataclasses.fields(cfg)]
    return {
        "--" + n.replace("_", "-"): getattr(cfg, n) for n in names if str(n).endswith("_weight")
    }


def weighted_families(weights: Mapping[str, float]) -> List[Type[VecoTerm]]:
    """The term families (``TERM_FAMILIES``, in order) with a key of non-zero weight."""
    return [f for f in TERM_FAMILIES if any(weights.get(key, 0.0) for key in f.keys)]


def refuse_idle_parameters(cfg: DdpSettings, who: str, idle: str) -> None:
    """``who`` (a flag) leaves ``idle`` without gradient: torch's DistributedDataParallel
    (``--ddp-backend pytorch_ddp``/``c10d``, more than one process) raises at the second
    update unless ``--find-unused-parameters``; refuse that up front, in one line.

    The world is the process group's when one is up: fairseq resolves ``cfg``'s
    interpolations when it parses the command line, before a launcher (torchrun, srun)
    has set the world size, so ``cfg.distributed_world_size`` still says 1 there."""
    group = torch.distributed.is_available() and torch.distributed.is_initialized()
    world = max(cfg.distributed_world_size, torch.distributed.get_world_size() if group else 1)
    if world > 1 and cfg.ddp_backend in ("pytorch_ddp", "c10d") and not cfg.find_unused_parameters:
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
    (``sample_size``: a Python int from the collater's ``pair_masked``, so that fairseq's
    Trainer does not wait for the device to read it) exactly as fairseq's ``masked_lm``;
    every token term is logged on its own (loss in bits per predicted token, and
    accuracy). Built from the criterion's dataclass config (``cfg``), as fairseq-train
    builds it.

    ``extensions`` (model parts its terms need: ``fit_model`` builds them into the model
    to train, from the model's own args), ``needs_warm_start`` (the task warns when
    training starts from random weights) and ``reads_links`` (its weighted terms that
    read word alignments: the task refuses bitext without them) follow from the recipe.

    Refused when built, in one line naming the flag: a weight that is not a finite
    number >= 0, every weight 0, a setting a term's equations forbid
    (``VecoTerm.check_settings``), a term the user asked for (``asked_terms``) whose
    sub-batch the task's data does not give, and a recipe with no term the data feeds."""

    def __init__(self, cfg: Any, task):
        super().__init__(task)
        self.cfg = cfg
        weight_flags = _weight_flags(cfg)
        for flag, value in weight_flags.items():
            check_weight(f"{flag} {value}", value)
        self.weights: Dict[str, float] = self.term_weights(cfg)
        if not any(self.weights.values()):
            raise VecoUserError(
                f"--criterion {cfg._name}: every loss weight is 0 "
                f"({', '.join(weight_flags)}): nothing to train; give one a weight > 0"
            )
        for family in TERM_FAMILIES:
            family.check_settings(cfg, self.weights)
        self._check_data(cfg, task)
        self.terms: List[VecoTerm] = [
            family(cfg, task, self.weights) for family in weighted_families(self.weights)
        ]
        self.extensions = tuple(e for term in self.terms for e in term.extensions)
        self.needs_warm_start = any(term.warm_start for term in self.terms)
        self.reads_links = tuple(
            key for term in self.terms if term.reads_links for key in term.keys if term.on(key)
        )
        self._check_ddp(cfg)

    def asked_terms(self) -> Dict[str, str]:
        """The terms the user asked for by name -> how to turn each off. Each must find
        its sub-batch in the data; the recipe's other terms train where the data has
        theirs (``ca_mlm`` on monolingual text alone is VECO without bitext)."""
        return {}

    def _check_data(self, cfg: Any, task) -> None:
        """Every asked-for term, and at least one weighted term, has its sub-batch among
        the task's ``mono_langs`` / ``bi_pairs`` (a task without them: not checked)."""
        given = {"mono": getattr(task, "mono_langs", None), "bi": getattr(task, "bi_pairs", None)}
        if any(value is None for value in given.values()):
            return
        for key, off in self.asked_terms().items():
            kind = kind_of(key)
            if self.weights.get(key) and kind is not None and not given[kind]:
                what, flag, example = _DATA[kind]
                raise VecoUserError(
                    f"{self._asked_by()}: {key} reads {what} batches and {flag} names none: "
                    f"add {flag} {example} (or {off})"
                )
        weighted = [key for key, weight in self.weights.items() if weight]
        kinds = [kind_of(key) for key in weighted]
        if all(kind is not None and not given[kind] for kind in kinds):
            missing = sorted({kind for kind in kinds if kind is not None})
            flags = " and ".join(f"{_DATA[k][1]} {_DATA[k][2]}" for k in missing)
            raise VecoUserError(
                f"--criterion {cfg._name} trains nothing: its weighted terms "
                f"({', '.join(weighted)}) read {' and '.join(_DATA[k][0] for k in missing)} "
                f"batches, which the command does not give: add {flags}"
            )

    def _asked_by(self) -> str:
        """How the user named the recipe (the start of a refusal)."""
        return f"--criterion {self.cfg._name}"

    def _check_ddp(self, cfg: Any) -> None:
        """Without a cross term (``mono_ca``/``bi_ca``) the cross-attention gets no
        gradient."""
        if not any(self.weights.get(k, 0.0) for k in ("mono_ca", "bi_ca")):
            refuse_idle_parameters(cfg, f"--criterion {cfg._name}", "the cross-attention")

    @staticmethod
    def term_weights(cfg: Any) -> Dict[str, float]:
        """Every term the objective can produce -> its weight in the loss."""
        raise NotImplementedError

    @classmethod
    def fit_model(cls, cfg: Any, model: Any) -> None:
        """Check ``model`` (a ``VecoModel``, or one wrapped for data parallelism) against
        the recipe's weighted terms (``VecoTerm.check_model``), then build the parts they
        need (``VecoModel.build_extension``; a part the model has is kept).

        ``cfg``: the criterion's settings, or fairseq's whole namespace of a command that
        chose this criterion (a legacy model's args): ``VecoModel.fit_objective`` calls
        this with the model's own args, before the criterion, the optimizer and the
        data-parallel wrappers exist."""
        families = weighted_families(cls.term_weights(cfg))
        model = inner_model(model)
        for family in families:
            family.check_model(cfg, model)
        for name in (e for family in families for e in family.extensions):
            model.build_extension(name)

    def extend_model(self, model) -> None:
        """``fit_model`` with this criterion's settings, for a model built without them
        (a model built from other args than the criterion's)."""
        self.fit_model(self.cfg, model)

    def forward(self, model, sample, reduce=True):
        for term in self.terms:
            term.prepare(model)
        requests: Dict[str, Request] = {}
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
            counted = batch.get("pair_masked")  # the collater's: no device sync
            if counted is None:  # a batch made elsewhere
                counted = batch["pair_target"].ne(self.padding_idx).sum()
            sample_size = sample_size + counted
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
        totals = logged_totals(logging_outputs)  # the one host transfer of the step's logs

        def total(key):
            return totals.get(key, 0)

        sample_size = total("sample_size")
        metrics.log_scalar(
            "loss", total("loss") / max(sample_size, 1) / math.log(2), sample_size, round=3
        )
        names = sorted(k[: -len("_loss")] for k in totals if k.endswith("_loss"))
        for name in names:
            n = total(f"{name}_n")
            if n > 0:
                metrics.log_scalar(
                    f"{name}_loss", total(f"{name}_loss") / n / math.log(2), n, round=3
                )
                metrics.log_scalar(f"{name}_acc", 100.0 * total(f"{name}_correct") / n, n, round=2)
        for family in TERM_FAMILIES:
            family.reduce_metrics([totals])  # their sums, already on the host

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
