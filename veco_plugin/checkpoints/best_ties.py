"""``--best-on-ties earlier``: of checkpoints with the same best dev score, the first one stays
``checkpoint_best.pt``, as XTREME keeps it.

fairseq's ``checkpoint_utils.save_checkpoint`` writes ``checkpoint_best.pt`` when the score
is at least the best so far (``>=``): a later checkpoint with the same score replaces the
earlier one. XTREME's scripts replace the best only on a strictly greater dev score
(``run_classify.py:258`` and ``:781``, ``run_tag.py:197`` and ``:611``). With the task's
``best_on_ties == "earlier"`` a save whose score equals the best so far is passed to
fairseq without a score: every other file is written as before (``checkpoint_last.pt``, the
interval checkpoints), the best one is left as it is.
"""

import functools
from typing import Any, Callable, Optional

from ..patching import wrap_once


def keeps_best(score: Optional[float], best: Optional[float], earlier: bool) -> bool:
    """Whether a checkpoint of dev ``score`` stays scored for fairseq's best check, the best
    so far being ``best`` (None: none yet): all but the ties when ``earlier``."""
    return not (earlier and score is not None and best is not None and score == best)


def _earlier_on_ties(save_checkpoint: Callable) -> Callable:
    @functools.wraps(save_checkpoint)
    def wrapper(cfg, trainer, epoch_itr, val_loss):
        task_cfg: Any = getattr(trainer.task, "cfg", None)
        earlier = getattr(task_cfg, "best_on_ties", "later") == "earlier"
        from fairseq import checkpoint_utils

        # fairseq keeps the best so far on the function its module names (the outermost
        # wrapper), as ``save_checkpoint.best``
        best = getattr(checkpoint_utils.save_checkpoint, "best", None)
        if not keeps_best(val_loss, best, earlier):
            val_loss = None
        return save_checkpoint(cfg, trainer, epoch_itr, val_loss)

    return wrapper


def install() -> None:
    """The tie rule of ``--best-on-ties``; idempotent."""
    from fairseq import checkpoint_utils

    wrap_once(checkpoint_utils, "save_checkpoint", _earlier_on_ties, "best-on-ties")
