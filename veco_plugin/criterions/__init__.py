"""Registered criterions (register by import)."""

from . import ca_mlm, tlm  # noqa: F401
