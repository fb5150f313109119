"""veco_plugin: a fairseq ``--user-dir`` for VECO, TLM and cross-lingual alignment objectives."""

from . import hooks

hooks.install()

from . import criterions, models, optim, tasks  # noqa: E402,F401  (register by import)
