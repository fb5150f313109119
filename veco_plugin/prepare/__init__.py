"""``veco-prepare-pretraining``: a folder of many languages' text -> a sharded DATA.

::

    TEXT/mono/<lang>/*.txt[.gz|.xz]                    one segment a line
    TEXT/bi/<src>-<tgt>/<name>.<src>, <name>.<tgt>      line-aligned (.gz/.xz too)
        -> DATA/shard0 ... DATA/shard<N-1>              each a veco_pretraining DATA

Three steps, each streaming (memory flat in corpus size):

1. ``plan``: find the files (:mod:`.layout`), count and check every line once (UTF-8,
   pair line counts; empty segments dropped and counted, :mod:`.reading`), hold out
   validation, cut each corpus into N contiguous ranges; ``DATA/prepare.json``.
2. ``vocabulary``: the joint sentencepiece model on an α-smoothed, language-balanced
   sample capped in lines; ``DATA/spm.model``, ``DATA/dict.txt``.
3. ``shards``: each shard encoded and binarized with fairseq's mmap builder into a
   temporary directory, renamed when complete (a finished shard is skipped on re-run).

Steps 1-2 run once, under a lock (the first of a job array's tasks does them); step 3
runs per shard, in any order, in any process. Imported on use (nothing registers with
fairseq).
"""
