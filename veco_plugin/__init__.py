"""veco_plugin: a fairseq ``--user-dir`` for VECO, TLM and cross-lingual alignment objectives."""

from . import checkpoint_io, errors, trusted_load

trusted_load.install()
checkpoint_io.install()
errors.install()

from . import criterions, models, tasks  # noqa: E402,F401  (register by import)
