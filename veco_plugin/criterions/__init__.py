"""Registered criterions (register by import)."""

from . import ca_mlm, dwa, tlm  # noqa: F401
