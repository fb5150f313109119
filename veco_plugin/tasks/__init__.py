"""Registered tasks (register by import)."""

from . import veco_pretraining  # noqa: F401
