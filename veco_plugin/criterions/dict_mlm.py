"""``dict_mlm``: DICT-MLM, masked LM with the bilingual word list ``--align-dictionary``
(the term: ``veco_plugin.terms.dictionary_mlm``), two modes (``--dict-mlm-mode``):

- ``code_switch`` (default): ALIGN-MLM's run (Tang et al., §3 and App. G.4; the authors'
  ``data_collator_dict_mlm.py``): of the positions selected for prediction, each with
  probability ``--dict-mlm-prob`` (0.5) shows its translation in the *input* (the
  original token, unmasked, when it has none), the rest BERT's 80/10/10; every target is
  the original token;
- ``synonym_target``: Chaudhary et al. 2020 (DICT-MLM-50): the input masked as for MLM,
  the *target* at a selected position its translation with probability
  ``--dict-mlm-prob`` when it has one.

``--align-dictionary-pieces`` reads the word list as
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
    """Terms: ``mono_dict`` (MLM on monolingual batches, code-switched inputs or
    dictionary targets by ``--dict-mlm-mode``), ``bi_tlm`` (bilingual batches only);
    ``dict_swap_rate`` logged."""

    @staticmethod
    def term_weights(cfg):
        return {"mono_dict": cfg.mlm_weight, "bi_tlm": cfg.tlm_weight}
