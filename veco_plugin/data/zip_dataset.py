"""One monolingual and one bilingual batch per update."""

from collections import OrderedDict

import numpy as np
from fairseq.data import RoundRobinZipDatasets


class VecoZipDataset(RoundRobinZipDatasets):
    """``RoundRobinZipDatasets`` whose batches hold one sub-batch per key
    (``{"mono": ..., "bi": ...}``), re-ordered every epoch (the sub-datasets
    resample languages and re-draw masks per epoch).

    Sub-datasets truncate and skip bad pairs themselves (with counted warnings), so
    there is nothing left for ``--max-positions`` filtering to drop."""

    def ordered_indices(self):
        self._ordered_indices = OrderedDict(
            (key, dataset.ordered_indices()) for key, dataset in self.datasets.items()
        )
        return np.arange(len(self))

    def filter_indices_by_size(self, indices, max_positions=None):
        return indices, []

    def set_epoch(self, epoch):
        super().set_epoch(epoch)
        for dataset in self.datasets.values():
            dataset.set_epoch(epoch)

    @property
    def can_reuse_epoch_itr_across_epochs(self):
        return False

    def num_tokens_vec(self, indices):
        return np.max(
            [
                dataset.num_tokens_vec(
                    np.asarray(self._ordered_indices[key])[indices % len(dataset)]
                )
                for key, dataset in self.datasets.items()
            ],
            axis=0,
        )
