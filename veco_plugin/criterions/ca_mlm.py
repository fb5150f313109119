"""``ca_mlm``: cross-attention masked LM (VECO eq. 1), plus TLM on bilingual batches."""

from dataclasses import dataclass, field

from fairseq.criterions import register_criterion

from ..terms.segments import CaSettings
from .masked_terms import MaskedTermsConfig, MaskedTermsCriterion


@dataclass
class CaMlmConfig(CaSettings, MaskedTermsConfig):
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


@register_criterion("ca_mlm", dataclass=CaMlmConfig)
class CaMlmCriterion(MaskedTermsCriterion):
    """Terms per sub-batch ``k`` (``mono``/``bi``): ``k_x_mlm``, ``k_y_mlm``
    (H stream), ``k_x_ca``, ``k_y_ca`` (S stream) and ``bi_tlm``."""

    @staticmethod
    def term_weights(cfg):
        weights = {"bi_tlm": cfg.tlm_weight}
        for kind in ("mono", "bi"):
            weights[f"{kind}_mlm"] = cfg.mlm_weight
            weights[f"{kind}_ca"] = cfg.ca_weight
        return weights
