"""Scorers for model outputs (word-alignment AER, precision, recall, F1)."""
