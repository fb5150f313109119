"""ALIGN-MLM's controlled transfer experiment (Tang et al., App. F-H) as one command,
``veco-derived-transfer``: stages (:mod:`.stages`), the alignment score
(:mod:`.alignment_score`) and the table with its correlation (:mod:`.report`)."""
