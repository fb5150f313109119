"""Registered criterions (register by import)."""

from . import align_mlm, ca_mlm, dwa, tlm, veco_sentence_prediction, veco_terms, weam  # noqa: F401
