"""Registered tasks (register by import)."""

from . import translation_from_pretrained_veco  # noqa: F401
from . import veco_pretraining  # noqa: F401
from . import veco_sentence_prediction  # noqa: F401
from . import veco_span_qa  # noqa: F401
from . import veco_tagging  # noqa: F401
