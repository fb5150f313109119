"""Every process-wide hook of the plugin, installed once when the package is imported.

Each hook lives beside the code it serves and has its own idempotent ``install()``
(through :func:`veco_plugin.patching.wrap_once`); this module only orders them:

==================================  =====================================================
``errors``                          ``sys.excepthook``: a ``VecoUserError`` (and Ctrl-C) is
                                    one line
``checkpoints.trusted_load``        fairseq's own checkpoints load under torch >= 2.6
``checkpoints.atomic``              checkpoint copies complete or absent; a resume skips
                                    a broken one
``checkpoints.interrupts``          Ctrl-C: a save in progress finishes, DataLoader workers
                                    leave the stop to the main process, no ``.tmp`` left
``checkpoints.load_errors``         a checkpoint that cannot serve -> ``VecoUserError``
``checkpoints.best_ties``           ``--best-on-ties earlier``: tied best checkpoints keep
                                    the first (XTREME's rule)
``data.binarized``                  a ``.bin`` shorter than its index -> ``VecoUserError``
``train_flags``                     fairseq-train's start-up checks (the batch size)
``collating_threads``               training's batch-collating thread stopped when ``main``
                                    returns (it aborted the interpreter's finalization)
``warning_filters``                 torch's warnings about fairseq's own calls, silenced
``distributed.launch``              torchrun and Slurm on machines without GPUs; the
                                    process ends after torch's excepthook has written
``distributed.cpu_ddp``             fairseq's ``pytorch_ddp`` wrapping of a CPU model
``distributed.save_dir_lock``       one training run per ``--save-dir``
==================================  =====================================================

The modules it installs import :mod:`veco_plugin.errors`, never this module.
"""

from . import errors


def install() -> None:
    """Install every hook, in the order above; idempotent. The excepthook comes first,
    before torch and fairseq are imported: a Ctrl-C while they load is one line too."""
    errors.install()
    from . import collating_threads, train_flags, warning_filters
    from .checkpoints import atomic, best_ties, interrupts, load_errors, trusted_load
    from .data import binarized
    from .distributed import cpu_ddp, launch, save_dir_lock

    trusted_load.install()
    atomic.install()
    interrupts.install()
    load_errors.install()
    best_ties.install()
    binarized.install()
    train_flags.install()
    collating_threads.install()
    warning_filters.install()
    launch.install()
    cpu_ddp.install()
    save_dir_lock.install()
