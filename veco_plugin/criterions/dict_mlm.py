"""``dict_mlm``: DICT-MLM (Chaudhary et al. 2020; ALIGN-MLM App. G.4): masked LM whose
target at a masked position is, with probability ``--dict-mlm-prob`` (0.5), the token's
translation in the bilingual word list ``--align-dictionary`` when it has one (the term:
``veco_plugin.terms.dictionary_mlm``); ``--align-dictionary-pieces`` reads it as
``dict.txt`` token pairs (``veco-derive-language``'s ``bilingual.txt``), as ``align_mlm``
does. Trains on monolingual data alone (the paper);
with ``--bi-pairs``, also TLM (``--tlm-weight 0`` turns it off)."""

from dataclasses import dataclass

from fairseq.criterions import register_criterion

from ..terms.dictionary_alignment import AlignSettings
from ..terms.dictionary_mlm import DictMlmSettings
from .masked_terms import MaskedTermsConfig, MaskedTermsCriterion


@dataclass
class DictMlmConfig(DictMlmSettings, AlignSettings, MaskedTermsConfig):
    """DICT-MLM (``mlm_weight``) + TLM on bilingual batches (``tlm_weight``)."""


@register_criterion("dict_mlm", dataclass=DictMlmConfig)
class DictMlmCriterion(MaskedTermsCriterion):
    """Terms: ``mono_dict`` (MLM on monolingual batches against dictionary targets),
    ``bi_tlm`` (bilingual batches only); ``dict_swap_rate`` logged."""

    @staticmethod
    def term_weights(cfg):
        return {"mono_dict": cfg.mlm_weight, "bi_tlm": cfg.tlm_weight}
