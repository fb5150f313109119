"""fairseq checkpoints as the plugin reads and writes them.

- ``trusted_load``: fairseq's own checkpoints under torch >= 2.6 (``weights_only``);
- ``atomic``: checkpoint copies complete or absent, and resuming past a truncated one;
- ``load_errors``: a checkpoint that cannot serve ends the run in one line;
- ``files``: the ``--output`` checkpoint of a console script, checked and written atomically;
- ``config``: a checkpoint's model configuration (``cfg.model`` or legacy ``args``);
- ``averaging``: ``veco-average-checkpoints``; ``vocab_map``: ``veco-reduce-vocab``'s map.
"""
