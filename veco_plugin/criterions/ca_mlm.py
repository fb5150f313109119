"""``ca_mlm``: cross-attention masked LM (VECO eq. 1), plus TLM on bilingual batches."""

from dataclasses import dataclass, field

import torch
from fairseq.criterions import register_criterion
from fairseq.dataclass import FairseqDataclass

from .masked_terms import (
    MaskedTermsCriterion,
    summed,
    targets_at,
    tlm_request,
    tlm_term,
    token_scores,
)


@dataclass
class CaMlmConfig(FairseqDataclass):
    mlm_weight: float = field(
        default=1.0,
        metadata={
            "help": "weight of -log P(x|x̂) and -log P(y|ŷ) (H stream, eqs. 10-11); 0 disables"
        },
    )
    ca_weight: float = field(
        default=1.0,
        metadata={
            "help": "weight of -log P(x|ŷ,x̂) and -log P(y|x̂,ŷ) (S stream, eqs. 12-13); 0 disables"
        },
    )
    tlm_weight: float = field(
        default=1.0,
        metadata={"help": "weight of TLM on bilingual batches (VECO = TLM + CA-MLM); 0 disables"},
    )
    no_stop_gradient: bool = field(
        default=False,
        metadata={
            "help": "let the cross terms back-propagate into H^L (ablation; paper detaches it)"
        },
    )
    tlm_reset_positions: bool = field(
        default=False, metadata={"help": "restart positions at the second sentence in TLM (XLM)"}
    )


@register_criterion("ca_mlm", dataclass=CaMlmConfig)
class CaMlmCriterion(MaskedTermsCriterion):
    """Terms per sub-batch ``k`` (``mono``/``bi``): ``k_x_mlm``, ``k_y_mlm``
    (H stream), ``k_x_ca``, ``k_y_ca`` (S stream) and ``bi_tlm``."""

    def __init__(
        self, task, mlm_weight, ca_weight, tlm_weight, no_stop_gradient, tlm_reset_positions
    ):
        super().__init__(task)
        self.weights = {"mlm": mlm_weight, "ca": ca_weight, "tlm": tlm_weight}
        self.stop_gradient = not no_stop_gradient
        self.tlm_reset_positions = tlm_reset_positions

    def weight(self, term):
        return self.weights[term.rsplit("_", 1)[-1]]

    def requests(self, kind, batch):
        out = {}
        if self.weights["mlm"] or self.weights["ca"]:
            # pair_tokens/pair_target (2B, T): rows :B are x, rows B: the paired y
            out[f"{kind}_streams"] = {
                "mode": "two_stream",
                "tokens": batch["pair_tokens"],
                "masked": batch["pair_target"].ne(self.padding_idx),
                "stop_gradient": self.stop_gradient,
                "need_h": self.weights["mlm"] != 0,
                "need_s": self.weights["ca"] != 0,
            }
        if kind == "bi" and self.weights["tlm"]:
            out["bi_tlm"] = tlm_request(batch, self.padding_idx, self.tlm_reset_positions)
        return out

    def add_terms(self, kind, batch, outputs, terms):
        if f"{kind}_streams" in outputs:
            masked, gold = targets_at(batch["pair_target"], self.padding_idx)
            # logits (M, V) follow the masked positions row by row: x's come first
            n_x = masked[: masked.size(0) // 2].sum()
            is_x = torch.arange(gold.numel(), device=gold.device) < n_x
            streams = outputs[f"{kind}_streams"]
            for stream, key in (("mlm", "h_logits"), ("ca", "s_logits")):
                if key in streams:
                    loss, correct = token_scores(streams[key], gold)
                    terms[f"{kind}_x_{stream}"] = summed(loss, correct, is_x)
                    terms[f"{kind}_y_{stream}"] = summed(loss, correct, ~is_x)
        if "bi_tlm" in outputs and kind == "bi":
            terms["bi_tlm"] = tlm_term(batch, outputs["bi_tlm"], self.padding_idx)
