"""The quickstart: the paper's NMT initialization comparison at toy scale, end to end.

``python -m veco_plugin.quickstart`` (``scripts/quickstart.sh`` and ``make quickstart``
call it) runs stock ``fairseq-*`` tools and this project's console scripts as stages:

- ``options``: the flags, the ``--smoke`` preset and their checks -> a typed config;
- ``stages``: every stage as the exact command it runs, and the pipelines, read from the
  table of objectives (:mod:`veco_plugin.objectives`), run by the stamped-stage runner
  that ``veco-xtreme`` and ``veco-derived-transfer`` share (:mod:`veco_plugin.pipeline`:
  JSON stamps, per-stage logs, a bounded worker pool, Ctrl-C);
- ``report``: ``RUN/results.md``, ``RUN/results.json`` and ``RUN/learning_curve.png``.

Nothing here registers with fairseq; the modules are imported on use.
"""
