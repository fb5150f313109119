"""Stamped stages, the runner that the quickstart, ``veco-xtreme`` and
``veco-derived-transfer`` share.

- ``runner``: a :class:`~.runner.Stage` (the exact command it stamps, and what runs), JSON
  stamps that skip a finished stage and refuse one finished with another command,
  per-stage logs and the prefixed console, pipelines side by side on ``--jobs`` slots,
  Ctrl-C that stops every stage's process tree (a re-run resumes), and
  :class:`~.runner.PipelineError` for a refused or failed stage.
- ``warm``: the stages' Python commands (``fairseq-train``, ``python -m veco_plugin...``)
  forked from a *zygote* that imported torch and fairseq once, each started as its own
  interpreter would start it (tests/unit/test_warm_starts.py compares them); in ``ps``
  they show the zygote's command line (``.../pipeline/warm.py FD MODULE``).
- ``warm_path``: shims first on a shell stage's ``PATH`` that start its Python commands
  from those zygotes too (tests/unit/test_warm_path.py).

Nothing here registers with fairseq; the modules are imported on use.
"""
