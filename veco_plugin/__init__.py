"""veco_plugin: a fairseq ``--user-dir`` for VECO, TLM and cross-lingual alignment objectives."""

from . import trusted_load

trusted_load.install()

from . import criterions, models, tasks  # noqa: E402,F401  (register by import)
