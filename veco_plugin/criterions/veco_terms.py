"""``veco_terms``: any weighted combination of the loss terms in one run, e.g.

    --criterion veco_terms --terms mono_mlm=1,bi_tlm=1,align=10
    --criterion veco_terms --terms mono_mlm=1,bi_mlm=1,mono_ca=1,bi_ca=1,bi_tlm=1,bi_dwa=1

Term keys (``veco_plugin.terms.TERM_KEYS``): ``mono_mlm``/``bi_mlm`` (MLM of each
segment), ``mono_ca``/``bi_ca`` (VECO's CA-MLM cross terms), ``bi_tlm`` (TLM; WEAM's
L_mp), ``bi_dwa`` (XLM-Align), ``bi_cp`` (WEAM's L_cp), ``align`` (ALIGN-MLM's
L_ALIGN), ``mono_dict`` (DICT-MLM: MLM whose targets may be dictionary
translations). Every term's settings are available under the flags of its criterion."""

from dataclasses import dataclass, field

from fairseq.criterions import register_criterion

from ..terms import parse_terms
from ..terms.dictionary_alignment import AlignSettings
from ..terms.dictionary_mlm import DictMlmSettings
from ..terms.segments import CaSettings
from ..terms.translation_lm import TlmSettings
from ..terms.word_alignment import DwaSettings
from .masked_terms import DdpSettings, MaskedTermsCriterion


@dataclass
class VecoTermsConfig(
    CaSettings, DwaSettings, DictMlmSettings, AlignSettings, TlmSettings, DdpSettings
):
    terms: str = field(
        default="mono_mlm=1,bi_tlm=1",
        metadata={"help": "comma-separated KEY=WEIGHT, e.g. mono_mlm=1,bi_tlm=1,align=10"},
    )


@register_criterion("veco_terms", dataclass=VecoTermsConfig)
class VecoTermsCriterion(MaskedTermsCriterion):
    """Every term named in ``--terms`` must find its sub-batch in the data."""

    @staticmethod
    def term_weights(cfg):
        return parse_terms(cfg.terms)

    def asked_terms(self):
        return {key: f"drop {key} from --terms" for key in self.weights}

    def _asked_by(self):
        return f"--terms {self.cfg.terms}"
