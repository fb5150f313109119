"""``ca_mlm``: cross-attention masked LM (VECO eq. 1), plus TLM on bilingual batches."""

from dataclasses import dataclass, field

import torch
from fairseq.criterions import register_criterion

from .masked_terms import (
    MaskedTermsConfig,
    MaskedTermsCriterion,
    summed,
    targets_at,
    tlm_request,
    tlm_term,
    token_scores,
)


@dataclass
class CaMlmConfig(MaskedTermsConfig):
    """VECO = TLM + CA-MLM: ``tlm_weight`` (inherited) weighs the TLM term."""

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
    no_stop_gradient: bool = field(
        default=False,
        metadata={
            "help": "let the cross terms back-propagate into H^L (ablation; paper detaches it)"
        },
    )


@register_criterion("ca_mlm", dataclass=CaMlmConfig)
class CaMlmCriterion(MaskedTermsCriterion):
    """Terms per sub-batch ``k`` (``mono``/``bi``): ``k_x_mlm``, ``k_y_mlm``
    (H stream), ``k_x_ca``, ``k_y_ca`` (S stream) and ``bi_tlm``."""

    @staticmethod
    def term_weights(cfg):
        weights = {"bi_tlm": cfg.tlm_weight}
        for kind in ("mono", "bi"):
            for side in ("x", "y"):
                weights[f"{kind}_{side}_mlm"] = cfg.mlm_weight
                weights[f"{kind}_{side}_ca"] = cfg.ca_weight
        return weights

    def requests(self, kind, batch):
        cfg, out = self.cfg, {}
        if cfg.mlm_weight or cfg.ca_weight:
            # pair_tokens/pair_target (2B, T): rows :B are x, rows B: the paired y
            out[f"{kind}_streams"] = {
                "mode": "two_stream",
                "tokens": batch["pair_tokens"],
                "masked": batch["pair_target"].ne(self.padding_idx),
                "stop_gradient": not cfg.no_stop_gradient,
                "need_h": cfg.mlm_weight != 0,
                "need_s": cfg.ca_weight != 0,
            }
        if kind == "bi" and cfg.tlm_weight:
            out["bi_tlm"] = tlm_request(batch, self.padding_idx, cfg.tlm_reset_positions)
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
