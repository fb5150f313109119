"""``weam``: the Word-Exchange Aligning Model (Yang et al., eq. 11): L_mp + lambda * L_cp.

L_mp, the multilingual prediction over the concatenated pair with continuous positions
and no language embeddings (eqs. 1-4, 9), is ``bi_tlm``; L_cp, the cross-lingual
prediction through exchanged aligned representations (eqs. 5-8, 10), is ``bi_cp``
(``veco_plugin.terms.word_exchange``). The paper masks 30% of the pair:
``--bi-mask-prob 0.3``. Monolingual batches, if any, get MLM."""

from dataclasses import dataclass, field

from fairseq.criterions import register_criterion

from .masked_terms import MaskedTermsConfig, MaskedTermsCriterion


@dataclass
class WeamConfig(MaskedTermsConfig):
    cp_weight: float = field(
        default=1.0, metadata={"help": "lambda, the weight of L_cp (eq. 11; paper: 1)"}
    )


@register_criterion("weam", dataclass=WeamConfig)
class WeamCriterion(MaskedTermsCriterion):
    """Terms: ``bi_tlm`` (L_mp), ``bi_cp`` (L_cp) and ``mono_mlm``."""

    @staticmethod
    def term_weights(cfg):
        return {"mono_mlm": cfg.mlm_weight, "bi_tlm": cfg.tlm_weight, "bi_cp": cfg.cp_weight}

    def asked_terms(self):
        return {"bi_cp": "--cp-weight 0"}
