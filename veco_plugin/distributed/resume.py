"""Resuming an epoch on another number of processes.

fairseq shuffles an epoch's batches once (seed + epoch, the same in every process) and
gives rank r of W the batches r, r+W, r+2W, ...: after n iterations of every rank the
first n*W batches of the epoch are consumed. Its iterator state records n only, so a
checkpoint of 2 ranks resumed by 1 process re-reads half of what was trained on, and
one of 1 process resumed by 2 fails with "Cannot resume training due to dataloader
mismatch". :class:`VecoEpochBatchIterator` also records W and, resumed with another
W', starts every rank at n*W // W' iterations: the job continues with the first batch
it had not trained on (when n*W is not a multiple of W', up to W'-1 batches before it
are read again, and logged).
"""

import logging
from typing import Any, Dict

from fairseq.data.iterators import EpochBatchIterator

logger = logging.getLogger(__name__)


class VecoEpochBatchIterator(EpochBatchIterator):
    """fairseq's epoch iterator whose state survives a change of world size."""

    @classmethod
    def adopt(cls, iterator: EpochBatchIterator) -> EpochBatchIterator:
        """``iterator`` (built by ``FairseqTask.get_batch_iterator``) as this class."""
        if type(iterator) is EpochBatchIterator:
            iterator.__class__ = cls
        return iterator

    def state_dict(self) -> Dict[str, Any]:
        return dict(super().state_dict(), num_shards=self.num_shards)

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        saved = state_dict.get("num_shards", self.num_shards)
        done = state_dict.get("iterations_in_epoch", 0)
        if saved != self.num_shards and done > 0:
            consumed = done * saved  # batches of the epoch, over all ranks
            state_dict = dict(state_dict, iterations_in_epoch=consumed // self.num_shards)
            again = consumed % self.num_shards
            logger.info(
                "resuming epoch %d on %d processes (saved by %d): %d of its batches are "
                "trained on, each rank starts at iteration %d%s",
                state_dict["epoch"],
                self.num_shards,
                saved,
                consumed,
                state_dict["iterations_in_epoch"],
                f"; {again} batches are read again" if again else "",
            )
        super().load_state_dict(state_dict)
