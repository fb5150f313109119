"""Registered tasks (register by import)."""
