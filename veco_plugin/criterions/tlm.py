"""``tlm``: the XLM baseline: MLM on monolingual batches, TLM on bilingual batches."""

from dataclasses import dataclass

from fairseq.criterions import register_criterion

from .masked_terms import MaskedTermsConfig, MaskedTermsCriterion


@dataclass
class TlmConfig(MaskedTermsConfig):
    """XLM: MLM (``mlm_weight``) + TLM (``tlm_weight``); nothing of its own."""


@register_criterion("tlm", dataclass=TlmConfig)
class TlmCriterion(MaskedTermsCriterion):
    """Terms: ``mono_mlm`` (each segment on its own) and ``bi_tlm`` (the pair
    concatenated, no language embeddings)."""

    @staticmethod
    def term_weights(cfg):
        return {"mono_mlm": cfg.mlm_weight, "bi_tlm": cfg.tlm_weight}
