"""Loss terms: each lives once, here; registered criteria are recipes over them
(``veco_plugin.criterions``) and ``--criterion veco_terms --terms KEY=W,...`` trains
any weighted combination."""

from typing import Dict, Tuple, Type

from ..errors import VecoUserError
from .base import VecoTerm, check_weight, key_of, kind_of
from .dictionary_alignment import DictionaryAlignmentTerm
from .dictionary_mlm import DictionaryMlmTerm
from .segments import SegmentTerms
from .translation_lm import TranslationTerm
from .word_alignment import DenoisingAlignmentTerm
from .word_exchange import WordExchangeTerm

# in the order their requests are built (bilingual terms extend the TLM request)
TERM_FAMILIES: Tuple[Type[VecoTerm], ...] = (
    SegmentTerms,
    TranslationTerm,
    DenoisingAlignmentTerm,
    WordExchangeTerm,
    DictionaryAlignmentTerm,
    DictionaryMlmTerm,
)
TERM_KEYS: Tuple[str, ...] = tuple(k for family in TERM_FAMILIES for k in family.keys)


def parse_terms(text: str, flag: str = "--terms") -> Dict[str, float]:
    """``"mono_mlm=1,bi_tlm=1,align=10"`` -> {key: weight}; one-line errors name the flag
    (an unknown or repeated key, a weight that is not a finite number >= 0, all zero)."""
    weights: Dict[str, float] = {}
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        key, sep, value = item.partition("=")
        key = key.strip()
        if key not in TERM_KEYS:
            raise VecoUserError(f"{flag}: unknown term {key!r}; choose from {', '.join(TERM_KEYS)}")
        try:
            weight = float(value) if sep else 1.0
        except ValueError:
            raise VecoUserError(f"{flag}: {item!r}: the weight must be a number (KEY=WEIGHT)")
        if key in weights:
            raise VecoUserError(f"{flag}: {key} is given twice")
        check_weight(f"{flag} {item}", weight)
        weights[key] = weight
    if not any(weights.values()):
        raise VecoUserError(f"{flag} {text!r}: give at least one term with a non-zero weight")
    return weights


__all__ = ["TERM_FAMILIES", "TERM_KEYS", "VecoTerm", "key_of", "kind_of", "parse_terms"]
