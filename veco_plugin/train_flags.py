"""fairseq-train's start-up assertion on the batch size as a one-line error.

``fairseq_cli.train.main`` begins with ``assert cfg.dataset.max_tokens is not None or
cfg.dataset.batch_size is not None``: a command with neither ``--max-tokens`` nor
``--batch-size`` ended in an ``AssertionError`` traceback. A batch size below 1 passed that
assertion and went on (``--batch-size 0`` hung in batching). The same conditions are checked
when ``fairseq_cli.train`` hands its ``main`` to ``distributed_utils.call_main`` -- before
any worker process is spawned, so one line is printed on every launch path -- and ends in a
:class:`~veco_plugin.errors.VecoUserError` naming the flags. Assertion failures anywhere
else keep their traceback.

The other ``assert`` in that ``main`` (``cfg.criterion``) cannot fail from the command
line: ``--criterion`` has a default and its configuration always holds ``_name``.
"""

import functools
from typing import Any, Callable

from .errors import VecoUserError
from .patching import wrap_once

# cfg.dataset key -> flag, for the batch sizes (the *_valid ones default to the others)
_BATCH_SIZES = {
    "max_tokens": "--max-tokens",
    "batch_size": "--batch-size",
    "max_tokens_valid": "--max-tokens-valid",
    "batch_size_valid": "--batch-size-valid",
}


def check_train_config(cfg: Any) -> None:
    """Raise a :class:`VecoUserError` for a configuration ``fairseq_cli.train.main``
    would stop at with an ``AssertionError``, or a batch size below 1."""
    if cfg.dataset.max_tokens is None and cfg.dataset.batch_size is None:
        raise VecoUserError(
            "no batch size: pass --max-tokens N (tokens per batch) or --batch-size N "
            "(sentences per batch), or both"
        )
    for key, flag in _BATCH_SIZES.items():
        value = getattr(cfg.dataset, key, None)
        if value is not None and value < 1:
            unit = "tokens" if key.startswith("max_tokens") else "sentences"
            raise VecoUserError(f"{flag} {value}: pass a positive number of {unit} per batch")


def _is_train_main(main: Callable) -> bool:
    return (getattr(main, "__module__", None), getattr(main, "__qualname__", None)) == (
        "fairseq_cli.train",
        "main",
    )


def _checking(call_main: Callable) -> Callable:
    @functools.wraps(call_main)
    def wrapper(cfg, main, **kwargs):
        if _is_train_main(main):
            check_train_config(cfg)
        return call_main(cfg, main, **kwargs)

    return wrapper


def install() -> None:
    """Wrap ``fairseq.distributed.utils.call_main`` (``fairseq_cli.train.cli_main`` and
    ``fairseq-hydra-train`` look it up in its module); idempotent."""
    from fairseq.distributed import utils

    wrap_once(utils, "call_main", _checking, "train_flags")
