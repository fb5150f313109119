"""``align_mlm``: ALIGN-MLM (Tang et al.): MLM + alpha * L_ALIGN over a bilingual word
list on the input embeddings (the term: ``veco_plugin.terms.dictionary_alignment``);
``--align-dictionary-pieces`` reads the list (and ``--align-heldout``) as ``dict.txt``
token pairs, as ``dict_mlm`` does. Trains on monolingual data alone (the paper); with
``--bi-pairs``, also TLM."""

from dataclasses import dataclass, field

from fairseq.criterions import register_criterion

from ..terms.dictionary_alignment import AlignSettings
from .masked_terms import MaskedTermsConfig, MaskedTermsCriterion


@dataclass
class AlignMlmConfig(AlignSettings, MaskedTermsConfig):
    align_weight: float = field(
        default=10.0, metadata={"help": "alpha, the weight of L_ALIGN (paper: 10)"}
    )


@register_criterion("align_mlm", dataclass=AlignMlmConfig)
class AlignMlmCriterion(MaskedTermsCriterion):
    """Terms: ``mono_mlm``, ``bi_tlm`` (bilingual batches only) and ``align``, with
    ``align_cos`` and, at validation, ``align_score`` logged."""

    @staticmethod
    def term_weights(cfg):
        return {"mono_mlm": cfg.mlm_weight, "bi_tlm": cfg.tlm_weight, "align": cfg.align_weight}
