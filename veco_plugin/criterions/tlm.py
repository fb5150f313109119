"""``tlm``: the XLM baseline: MLM on monolingual batches, TLM on bilingual batches."""

from dataclasses import dataclass, field

from fairseq.criterions import register_criterion
from fairseq.dataclass import FairseqDataclass

from .masked_terms import MaskedTermsCriterion, masked_cross_entropy, targets_at, tlm_term


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

    def add_terms(self, model, kind, batch, terms):
        if kind == "bi":
            terms["bi_tlm"] = tlm_term(model, batch, self.padding_idx, self.tlm_reset_positions)
        else:
            masked, gold = targets_at(batch["pair_target"], self.padding_idx)
            logits, _ = model(batch["pair_tokens"], masked_tokens=masked)
            terms[f"{kind}_mlm"] = masked_cross_entropy(logits, gold)
