"""Launching and resuming data-parallel pre-training: torchrun and Slurm on CPU, one run
per save dir, resuming a checkpoint on another number of processes."""
