"""Registered criterions (register by import)."""
