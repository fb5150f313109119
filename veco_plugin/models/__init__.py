"""Registered models (register by import)."""

from . import veco  # noqa: F401
from . import veco_transformer  # noqa: F401
