"""Dataset wrappers (pairing, masking, collation) and the pre-training dictionary."""
