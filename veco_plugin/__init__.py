"""veco_plugin: a fairseq ``--user-dir`` for VECO, TLM and cross-lingual alignment objectives."""

from . import errors
from .checkpoints import atomic, trusted_load
from .distributed import launch, save_dir_lock

trusted_load.install()
atomic.install()
errors.install()
launch.install()
save_dir_lock.install()

from . import criterions, models, optim, tasks  # noqa: E402,F401  (register by import)
