"""``tlm``: the XLM baseline: MLM on monolingual batches, TLM on bilingual batches."""

from dataclasses import dataclass, field

from fairseq.criterions import register_criterion
from fairseq.dataclass import FairseqDataclass

from .masked_terms import (
    MaskedTermsCriterion,
    masked_cross_entropy,
    targets_at,
    tlm_request,
    tlm_term,
)


@dataclass
class TlmConfig(FairseqDataclass):
    tlm_reset_positions: bool = field(
        default=False,
        metadata={
            "help": "restart positions at the second sentence (XLM); default: continuous (VECO)"
        },
    )


@register_criterion("tlm", dataclass=TlmConfig)
class TlmCriterion(MaskedTermsCriterion):
    """Terms: ``mono_mlm`` (each segment on its own) and ``bi_tlm`` (the pair
    concatenated, no language embeddings)."""

    def __init__(self, task, tlm_reset_positions):
        super().__init__(task)
        self.tlm_reset_positions = tlm_reset_positions

    def weight(self, term):
        return 1.0

    def requests(self, kind, batch):
        if kind == "bi":
            return {"bi_tlm": tlm_request(batch, self.padding_idx, self.tlm_reset_positions)}
        masked = batch["pair_target"].ne(self.padding_idx)
        return {
            f"{kind}_mlm": {"mode": "plug_out", "tokens": batch["pair_tokens"], "masked": masked}
        }

    def add_terms(self, kind, batch, outputs, terms):
        if kind == "bi":
            terms["bi_tlm"] = tlm_term(batch, outputs["bi_tlm"], self.padding_idx)
        else:
            _, gold = targets_at(batch["pair_target"], self.padding_idx)
            terms[f"{kind}_mlm"] = masked_cross_entropy(outputs[f"{kind}_mlm"]["logits"], gold)
