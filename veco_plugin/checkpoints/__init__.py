"""fairseq checkpoints as the plugin reads and writes them.

- ``encoder``: the one checked loader of every tool (``read_checkpoint``; ``load_encoder``
  for veco-align, veco-retrieve, veco-export-hf; the dict.txt and sentencepiece model
  beside a checkpoint); ``classifier``: any checkpoint as a sentence classifier
  (veco-sentence-eval), read through ``read_checkpoint``;
- ``trusted_load``: fairseq's own checkpoints under torch >= 2.6 (``weights_only``);
- ``atomic``: checkpoint copies complete or absent, and resuming past a truncated one;
- ``interrupts``: Ctrl-C during fairseq-train (a save in progress finishes first, the
  DataLoader workers leave the stop to the main process, no ``.tmp`` stays);
- ``load_errors``: a checkpoint that cannot serve ends the run in one line;
- ``files``: the ``--output`` checkpoint of a console script, checked and written atomically;
- ``config``: a checkpoint's model configuration (``cfg.model`` or legacy ``args``);
- ``sizes``: a checkpoint's sizes from its weights, and the ``veco_transformer_*`` arch
  that has them (``veco-init-nmt``, ``veco-xtreme``);
- ``averaging``: ``veco-average-checkpoints``; ``vocab_map``: ``veco-reduce-vocab``'s map.
"""
