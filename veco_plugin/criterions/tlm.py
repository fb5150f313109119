"""``tlm``: the XLM baseline: MLM on monolingual batches, TLM on bilingual batches."""

from dataclasses import dataclass

from fairseq.criterions import register_criterion

from .masked_terms import (
    MaskedTermsConfig,
    MaskedTermsCriterion,
    mlm_request,
    mlm_term,
    tlm_request,
    tlm_term,
)


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

    def requests(self, kind, batch):
        if kind == "bi":
            return {"bi_tlm": tlm_request(batch, self.padding_idx, self.cfg.tlm_reset_positions)}
        return {f"{kind}_mlm": mlm_request(batch, self.padding_idx)}

    def add_terms(self, kind, batch, outputs, terms):
        if kind == "bi":
            terms["bi_tlm"] = tlm_term(batch, outputs["bi_tlm"], self.padding_idx)
        else:
            terms[f"{kind}_mlm"] = mlm_term(batch, outputs[f"{kind}_mlm"], self.padding_idx)
