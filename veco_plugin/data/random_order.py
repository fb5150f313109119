"""Examples in a random order drawn anew for each epoch: XTREME's ``RandomSampler``
(``run_tag.py:85``, ``run_classify.py:102``, ``run_squad.py:111``) as fairseq batches it.

fairseq's ``FairseqTask.get_batch_iterator`` with ``rebuild_batches`` builds each epoch's
batches by calling ``ordered_indices()`` under ``numpy_seed(seed + epoch)``, then cutting the
order into batches as it comes (``batch_by_size``). Here that order is a permutation drawn
from numpy's global state there: every epoch its own batches of random examples, the same
ones for the same ``--seed`` and epoch.
"""

import numpy as np
from fairseq.data import BaseWrapperDataset


class VecoRandomOrderDataset(BaseWrapperDataset):
    """``dataset`` whose ``ordered_indices()`` is a fresh permutation (of numpy's global
    state, which fairseq seeds with ``seed + epoch`` around the call)."""

    def ordered_indices(self) -> np.ndarray:
        return np.random.permutation(len(self))
