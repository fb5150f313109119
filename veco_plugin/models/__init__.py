"""Registered models (register by import)."""

from . import veco  # noqa: F401
