"""XLM-Align's denoising word alignment (``bi_dwa``; Chi et al., 2021, Algorithm 1).

Each update, for the bilingual sub-batch:

1. self-label the *unmasked* pair with the current model (no gradient, no dropout):
   entropic optimal transport over the similarities of a chosen layer and iterative
   alignment filtering (§3.1, eqs. 1-9; ``veco_plugin.alignment.self_label``);
2. the TLM forward of the masked concatenated pair also runs, on the DWA layer,
   XLM-Align's pointer network (eqs. 10-13) in both directions;
3. denoising word alignment (eqs. 14-15): queries are the masked positions that have a
   self-labelled link; each link (i, j) of a query i is one cross-entropy target
   -log a_ij (a piece linked twice by the filtering has two targets).
"""

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import torch
from fairseq import metrics
from fairseq.dataclass import FairseqDataclass
from torch import Tensor

from ..alignment import self_label
from ..errors import VecoUserError
from ..models.layer_spec import default_layer
from ..models.requests import Pointer, SelfLabel
from ..modules.pair_layout import Halves
from .base import VecoTerm, check_range, inner_model
from .scores import logged_total
from .translation_lm import concat_request


@dataclass
class DwaSettings(FairseqDataclass):
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


def dwa_layers(cfg, model_layers: int) -> Dict[str, int]:
    """``--label-layer`` and ``--dwa-layer`` of ``cfg`` (defaults: the table's label
    layer, the last) for a model of ``model_layers`` layers; refused outside 1..L."""
    label, dwa = cfg.label_layer, cfg.dwa_layer
    label = default_layer("label", model_layers) if label is None else label
    dwa = model_layers if dwa is None else dwa
    for flag, value in (("--label-layer", label), ("--dwa-layer", dwa)):
        if not 1 <= value <= model_layers:
            raise VecoUserError(f"{flag} {value}: the model has layers 1..{model_layers}")
    return {"label": label, "dwa": dwa}


class DenoisingAlignmentTerm(VecoTerm):
    """``bi_dwa`` (both directions). Also logged: ``dwa_label_share`` (% of the
    bilingual masked tokens that received a label) and ``dwa_links_per_pair``
    (self-labelled links per translation pair)."""

    keys = ("bi_dwa",)
    extensions = ("pointer",)
    warm_start = True  # the paper: DWA fails from random weights

    def __init__(self, cfg, task, weights):
        super().__init__(cfg, task, weights)
        self.layers: Dict[str, int] = {}  # resolved with the model (prepare)

    @staticmethod
    def check_settings(cfg, weights):
        """The ranges of §3.1 (Chi et al., 2021): μ > 0 divides in K = exp(f_sim / μ)
        (eq. 5); Sinkhorn (eq. 6) and the filtering (eqs. 7-9) run at least once (no
        iteration: no transport plan, or no label for DWA to learn); the discount α
        of eq. 9 is in [0, 1]. The layers (1..L) are checked with the model."""
        if getattr(cfg, "filter_alpha", None) is None:
            return  # a criterion without these settings
        mu = cfg.sinkhorn_mu
        if not (math.isfinite(mu) and mu > 0):
            raise VecoUserError(
                f"--sinkhorn-mu {mu}: the entropic regularization μ divides the similarities "
                "(K = exp(f_sim / μ), eq. 5 of XLM-Align): give a finite μ > 0 (paper: 1.0)"
            )
        for flag, value, what in (
            ("--sinkhorn-iterations", cfg.sinkhorn_iterations, "Sinkhorn steps, eq. 6"),
            ("--filter-iterations", cfg.filter_iterations, "filtering rounds, eqs. 7-9"),
        ):
            check_range(flag, value, 1, math.inf, f"give at least 1 ({what}; paper: 2)")
        check_range(
            "--filter-alpha",
            cfg.filter_alpha,
            0.0,
            1.0,
            "the discount α of eq. 9 (XLM-Align) is in [0, 1] (paper: 0.9): it scales "
            "down the cells beside a link, never up or below 0",
        )

    @staticmethod
    def check_model(cfg, model):
        dwa_layers(cfg, len(model.sentence_encoder.layers))

    def resolve_layers(self, model_layers: int) -> Dict[str, int]:
        """The self-labelling and DWA layers for a model of ``model_layers`` layers."""
        return dwa_layers(self.cfg, model_layers)

    def prepare(self, model):
        if not self.layers:
            self.layers = self.resolve_layers(len(inner_model(model).sentence_encoder.layers))

    def requests(self, kind, batch, requests):
        if kind != "bi":
            return
        pointer = Pointer(self.layers["dwa"], Halves.of(batch))
        concat = concat_request(requests, batch, self.cfg.tlm_reset_positions, pointer=pointer)
        tokens, target = batch["concat_tokens"], batch["concat_target"]
        requests["bi_label"] = SelfLabel(
            torch.where(target.ne(self.pad), target, tokens),
            self.layers["label"],
            first_lengths=concat.first_lengths,
            packing=concat.packing,
        )

    def add(self, kind, batch, outputs, terms):
        if kind != "bi":
            return
        pointer = outputs["bi_tlm"].pointer
        x_real, y_real = pointer.x_real, pointer.y_real  # (B, W)
        halves = Halves.of(batch)
        x_h, y_h = halves.gather(outputs["bi_label"].hidden)  # (B, W, C) each
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
        x_masked, y_masked = halves.mask(batch["concat_target"].ne(self.pad))
        x_masked, y_masked = x_masked & x_real, y_masked & y_real
        # eq. 14: queries are masked positions with a label; eq. 15: CE to each label
        forward = links & x_masked.unsqueeze(2)  # (B, W_x, W_y)
        backward = links.transpose(1, 2) & y_masked.unsqueeze(2)  # (B, W_y, W_x)
        loss = _pointed(pointer.forward, forward) + _pointed(pointer.backward, backward)
        correct = _hits(pointer.forward, forward) + _hits(pointer.backward, backward)
        labelled = forward.any(2).sum() + backward.any(2).sum()
        terms["bi_dwa"] = {
            "key": "bi_dwa",
            "loss": loss,
            "n": forward.sum() + backward.sum(),
            "correct": correct,
            "counts": {
                "dwa_labelled": labelled,
                "dwa_masked": x_masked.sum() + y_masked.sum(),
                "dwa_links": links.sum(),
                "dwa_pairs": halves.lengths.size(1),
            },
        }

    @staticmethod
    def reduce_metrics(logging_outputs: List[Dict]) -> None:
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


def _hits(log_probs: Tensor, labels: Tensor) -> Any:
    """Labels (i, j) where j is query i's most probable key."""
    best = log_probs.argmax(-1, keepdim=True)  # (B, W, 1)
    return labels.gather(-1, best).sum()
