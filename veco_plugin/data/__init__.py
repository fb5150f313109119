"""Dataset wrappers: pairing, masking, collation."""
