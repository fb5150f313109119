"""``dwa``: XLM-Align pre-training (Chi et al., 2021, Algorithm 1): MLM + TLM + DWA.

Each update, for the bilingual sub-batch:

1. self-label the *unmasked* pair with the current model (no gradient, no dropout):
   entropic optimal transport over the similarities of a chosen layer and iterative
   alignment filtering (§3.1, eqs. 1-9; ``veco_plugin.alignment.self_label``);
2. one forward of the masked concatenated pair gives the TLM logits and, from the DWA
   layer, XLM-Align's pointer network (eqs. 10-13) in both directions;
3. denoising word alignment (eqs. 14-15): queries are the masked positions that have a
   self-labelled link; each link (i, j) of a query i is one cross-entropy target
   -log a_ij (a piece linked twice by the filtering has two targets).

The monolingual sub-batch gets MLM. Loss = Σ weighted summed terms / masked tokens.
"""

import logging
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import torch
from fairseq import metrics
from fairseq.criterions import register_criterion
from omegaconf import II
from torch import Tensor

from ..alignment import self_label
from ..errors import VecoUserError
from ..modules.pointer_network import split_pair
from .masked_terms import (
    MaskedTermsConfig,
    MaskedTermsCriterion,
    logged_total,
    mlm_request,
    mlm_term,
    tlm_request,
    tlm_term,
)

logger = logging.getLogger(__name__)

# the paper's self-labelling layer for XLM-R base: 10 of 12 (Table 11)
LABEL_DEPTH = 10 / 12


@dataclass
class DwaConfig(MaskedTermsConfig):
    dwa_weight: float = field(
        default=1.0, metadata={"help": "weight of denoising word alignment (eq. 15)"}
    )
    label_layer: Optional[int] = field(
        default=None,
        metadata={
            "help": "layer whose hidden states self-label the alignments (1..L; default: "
            "the paper's depth, round(L * 10/12))"
        },
    )
    dwa_layer: Optional[int] = field(
        default=None,
        metadata={"help": "layer the pointer network reads (1..L; default: the last, Table 5)"},
    )
    sinkhorn_mu: float = field(
        default=1.0, metadata={"help": "entropic regularization μ of eq. 3 (Table 11)"}
    )
    sinkhorn_iterations: int = field(
        default=2, metadata={"help": "Sinkhorn iterations, eq. 6 (Table 11)"}
    )
    filter_iterations: int = field(
        default=2, metadata={"help": "iterative alignment filtering rounds, eqs. 8-9 (Table 11)"}
    )
    filter_alpha: float = field(default=0.9, metadata={"help": "discount α of eq. 9 (Table 11)"})
    ddp_backend: str = II("distributed_training.ddp_backend")
    find_unused_parameters: bool = II("distributed_training.find_unused_parameters")
    distributed_world_size: int = II("distributed_training.distributed_world_size")


@register_criterion("dwa", dataclass=DwaConfig)
class DwaCriterion(MaskedTermsCriterion):
    """Terms: ``mono_mlm``, ``bi_tlm`` and ``bi_dwa`` (both directions). Also logged:
    ``dwa_label_share`` (% of the bilingual masked tokens that received a label) and
    ``dwa_links_per_pair`` (self-labelled links per translation pair)."""

    uses_pointer_network = True
    needs_warm_start = True  # the paper: DWA fails from random weights

    def __init__(self, cfg: DwaConfig, task):
        super().__init__(cfg, task)
        self._layers: Dict[str, int] = {}  # resolved at the first step
        if (
            cfg.distributed_world_size > 1
            and cfg.ddp_backend in ("pytorch_ddp", "c10d")
            and not cfg.find_unused_parameters
        ):
            raise VecoUserError(
                f"--criterion dwa leaves the cross-attention idle, which --ddp-backend "
                f"{cfg.ddp_backend} refuses: add --find-unused-parameters (or use legacy_ddp)"
            )

    def layers(self, model_layers: int) -> Dict[str, int]:
        """The self-labelling and DWA layers for a model of ``model_layers`` layers."""
        label, dwa = self.cfg.label_layer, self.cfg.dwa_layer
        label = max(1, round(model_layers * LABEL_DEPTH)) if label is None else label
        dwa = model_layers if dwa is None else dwa
        for flag, value in (("--label-layer", label), ("--dwa-layer", dwa)):
            if not 1 <= value <= model_layers:
                raise VecoUserError(f"{flag} {value}: the model has layers 1..{model_layers}")
        return {"label": label, "dwa": dwa}

    @staticmethod
    def term_weights(cfg):
        return {"mono_mlm": cfg.mlm_weight, "bi_tlm": cfg.tlm_weight, "bi_dwa": cfg.dwa_weight}

    def forward(self, model, sample, reduce=True):
        if not self._layers:
            self._layers = self.layers(len(_inner(model).sentence_encoder.layers))
        return super().forward(model, sample, reduce)

    def requests(self, kind, batch):
        if kind != "bi":
            return {f"{kind}_mlm": mlm_request(batch, self.padding_idx)}
        out = {"bi_tlm": tlm_request(batch, self.padding_idx, self.cfg.tlm_reset_positions)}
        if self.cfg.dwa_weight:
            tokens, target = batch["concat_tokens"], batch["concat_target"]
            out["bi_label"] = {
                "mode": "self_label",
                "tokens": torch.where(target.ne(self.padding_idx), target, tokens),
                "layer": self._layers["label"],
                "first_lengths": out["bi_tlm"]["first_lengths"],
            }
            out["bi_tlm"]["pointer"] = {
                "layer": self._layers["dwa"],
                "first_lengths": batch["first_lengths"],
                "width": batch["pair_tokens"].size(1),
            }
        return out

    def add_terms(self, kind, batch, outputs, terms):
        if kind != "bi":
            terms[f"{kind}_mlm"] = mlm_term(batch, outputs[f"{kind}_mlm"], self.padding_idx)
            return
        if self.cfg.tlm_weight:
            terms["bi_tlm"] = tlm_term(batch, outputs["bi_tlm"], self.padding_idx)
        if self.cfg.dwa_weight:
            terms["bi_dwa"] = self._dwa(batch, outputs)

    def _dwa(self, batch: Dict, outputs: Dict) -> Dict[str, Any]:
        pointer = outputs["bi_tlm"]["pointer"]
        x_real, y_real = pointer["x_real"], pointer["y_real"]  # (B, W)
        first, width = batch["first_lengths"], x_real.size(1)
        x_h, y_h = split_pair(outputs["bi_label"]["hidden"], first, width)  # (B, W, C)
        links = self_label(
            x_h,
            y_h,
            x_real,
            y_real,
            mu=self.cfg.sinkhorn_mu,
            sinkhorn_iterations=self.cfg.sinkhorn_iterations,
            filter_iterations=self.cfg.filter_iterations,
            alpha=self.cfg.filter_alpha,
        )  # (B, W, W): x piece i -- y piece j
        x_masked, y_masked = split_pair(batch["concat_target"].ne(self.padding_idx), first, width)
        x_masked, y_masked = x_masked & x_real, y_masked & y_real
        # eq. 14: queries are masked positions with a label; eq. 15: CE to each label
        forward = links & x_masked.unsqueeze(2)  # (B, W_x, W_y)
        backward = links.transpose(1, 2) & y_masked.unsqueeze(2)  # (B, W_y, W_x)
        loss = _pointed(pointer["forward"], forward) + _pointed(pointer["backward"], backward)
        correct = _hits(pointer["forward"], forward) + _hits(pointer["backward"], backward)
        labelled = forward.any(2).sum() + backward.any(2).sum()
        return {
            "loss": loss,
            "n": forward.sum() + backward.sum(),
            "correct": correct,
            "counts": {
                "dwa_labelled": labelled,
                "dwa_masked": x_masked.sum() + y_masked.sum(),
                "dwa_links": links.sum(),
                "dwa_pairs": first.numel(),
            },
        }

    @staticmethod
    def reduce_metrics(logging_outputs: List[Dict]) -> None:
        MaskedTermsCriterion.reduce_metrics(logging_outputs)

        def total(key):
            return logged_total(logging_outputs, key)

        masked, pairs = total("dwa_masked"), total("dwa_pairs")
        if masked:
            metrics.log_scalar(
                "dwa_label_share", 100.0 * total("dwa_labelled") / masked, masked, round=2
            )
        if pairs:
            metrics.log_scalar("dwa_links_per_pair", total("dwa_links") / pairs, pairs, round=2)


def _pointed(log_probs: Tensor, labels: Tensor) -> Tensor:
    """Σ -log a_ij over the labelled (i, j): ``log_probs`` (B, W, W) float, ``labels``
    bool. ``where``, not a product: unlabelled entries may be -inf."""
    return -torch.where(labels, log_probs, torch.zeros_like(log_probs)).sum()


def _hits(log_probs: Tensor, labels: Tensor) -> Tensor:
    """Labels (i, j) where j is query i's most probable key."""
    best = log_probs.argmax(-1, keepdim=True)  # (B, W, 1)
    return labels.gather(-1, best).sum()


def _inner(model):
    """The VecoModel under fairseq's data-parallel wrappers."""
    while hasattr(model, "module"):
        model = model.module
    return model
