"""``veco-xtreme``: from pre-trained checkpoints to their zero-shot cross-lingual table
(recipes, checkpoints, stages, report)."""
