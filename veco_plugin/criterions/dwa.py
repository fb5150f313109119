"""``dwa``: XLM-Align pre-training (Chi et al., 2021, Algorithm 1): MLM + TLM + DWA
(the terms: ``veco_plugin.terms.word_alignment``)."""

from dataclasses import dataclass, field

from fairseq.criterions import register_criterion

from ..terms.word_alignment import DwaSettings
from .masked_terms import MaskedTermsConfig, MaskedTermsCriterion


@dataclass
class DwaConfig(DwaSettings, MaskedTermsConfig):
    dwa_weight: float = field(
        default=1.0, metadata={"help": "weight of denoising word alignment (eq. 15)"}
    )


@register_criterion("dwa", dataclass=DwaConfig)
class DwaCriterion(MaskedTermsCriterion):
    """Terms: ``mono_mlm``, ``bi_tlm`` and ``bi_dwa`` (both directions), with
    ``dwa_label_share`` and ``dwa_links_per_pair`` logged."""

    @staticmethod
    def term_weights(cfg):
        return {"mono_mlm": cfg.mlm_weight, "bi_tlm": cfg.tlm_weight, "bi_dwa": cfg.dwa_weight}

    def asked_terms(self):
        return {"bi_dwa": "--dwa-weight 0"}
