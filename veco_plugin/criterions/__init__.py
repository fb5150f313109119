"""Registered criterions (register by import)."""

from . import (  # noqa: F401
    align_mlm,
    ca_mlm,
    dict_mlm,
    dwa,
    tlm,
    veco_sentence_prediction,
    veco_span_qa,
    veco_tagging,
    veco_terms,
    weam,
)
