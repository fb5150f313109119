"""Stamped stages, the runner that the quickstart, ``veco-xtreme`` and
``veco-derived-transfer`` share.

- ``runner``: a :class:`~.runner.Stage` (the exact command it stamps, and what runs), JSON
  stamps that skip a finished stage and refuse one finished with another command,
  per-stage logs and the prefixed console, pipelines side by side on ``--jobs`` slots,
  Ctrl-C that stops every stage's process tree (a re-run resumes), and
  :class:`~.runner.PipelineError` for a refused or failed stage.

Nothing here registers with fairseq; the modules are imported on use.
"""
