"""Registered models (register by import)."""
