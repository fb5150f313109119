"""Optimizers (registered by import)."""

from . import veco_adamw  # noqa: F401
