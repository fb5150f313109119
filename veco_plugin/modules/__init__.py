"""Layers the VECO models are built from."""
