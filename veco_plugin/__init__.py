"""veco_plugin: a fairseq ``--user-dir`` for VECO, TLM and cross-lingual alignment objectives."""

from . import errors
from .checkpoints import atomic, trusted_load

trusted_load.install()
atomic.install()
errors.install()

from . import criterions, models, tasks  # noqa: E402,F401  (register by import)
