"""A ``fairseq-train`` command read by fairseq's own parser: its pass-through flags checked
before any work, and the updates it will make, counted from the batches its sampler builds.

The linear decay of XTREME's recipes reaches 0 at the last update only if
``--total-num-update`` is the number of updates the run really makes. That number is not
``epochs x examples / batch``: with ``--max-tokens`` a batch holds as many examples as fit
(21 windows of 384 pieces in 8192 tokens, not 32), fairseq shards the batches over the
processes (``ceil(batches / processes)`` each, the short shards padded) and groups
``--update-freq`` of them into an update (``ceil(shard / update_freq)``, the last update
of an epoch smaller). :func:`count_updates` asks the task for the batch iterator
``fairseq-train`` will use (``Trainer.get_train_iterator``'s arguments, epoch by epoch, for
rank 0) and counts.
"""

import contextlib
import io
import math
import threading
from typing import Sequence

from ..errors import VecoUserError

# fairseq builds its config through hydra's global state (``initialize``): one pipeline
# thread at a time (``--jobs``) may do it
_HYDRA = threading.Lock()


def parse_train_args(argv: Sequence[str], where: str):
    """``fairseq-train argv`` (without the program) as fairseq's parser reads it, as its
    config; a flag fairseq-train refuses is one line naming ``where`` the flags came from."""
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    parser = options.get_training_parser()
    captured = io.StringIO()
    with _HYDRA:
        try:
            with contextlib.redirect_stderr(captured):
                args = options.parse_args_and_arch(parser, input_args=list(argv))
        except SystemExit:
            lines = [line for line in captured.getvalue().splitlines() if line.strip()]
            reason = lines[-1].split("error: ", 1)[-1] if lines else "refused"
            raise VecoUserError(f"{where}: fairseq-train refuses them: {reason}") from None
        return convert_namespace_to_omegaconf(args)


def count_updates(cfg, processes: int) -> int:
    """The updates of the run ``cfg`` (a parsed fairseq-train command) with ``processes``
    data-parallel processes: over ``--max-epoch`` epochs, each epoch's batches (as the
    task's sampler builds them) split over the processes, ``--update-freq`` to an update."""
    from fairseq import tasks, utils

    task = tasks.setup_task(cfg.task)
    split = cfg.dataset.train_subset
    task.load_dataset(split, epoch=1, combine=True)
    freqs = list(cfg.optimization.update_freq)
    total = 0
    for epoch in range(1, cfg.optimization.max_epoch + 1):
        seed = cfg.common.seed + (epoch if cfg.dataset.update_ordered_indices_seed else 0)
        batches = task.get_batch_iterator(
            dataset=task.dataset(split),
            max_tokens=cfg.dataset.max_tokens,
            max_sentences=cfg.dataset.batch_size,
            max_positions=utils.resolve_max_positions(task.max_positions(), cfg.dataset.max_tokens),
            ignore_invalid_inputs=True,
            required_batch_size_multiple=cfg.dataset.required_batch_size_multiple,
            seed=seed,
            num_shards=processes,
            shard_id=0,
            epoch=epoch,
            disable_iterator_cache=True,
            skip_remainder_batch=cfg.optimization.skip_remainder_batch,
            grouped_shuffling=cfg.dataset.grouped_shuffling,
        )
        shard = len(batches.next_epoch_itr(shuffle=False))
        total += math.ceil(shard / freqs[min(epoch, len(freqs)) - 1])
    return total
