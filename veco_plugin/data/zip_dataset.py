"""One monolingual and one bilingual sub-batch per update, each of its own size."""

from collections import OrderedDict
from dataclasses import dataclass
from typing import Dict, List, Optional

import numpy as np
from fairseq.data import FairseqDataset, data_utils


@dataclass(frozen=True)
class SubBatchSize:
    """Bounds of one sub-batch: padded tokens and pairs (None: unbounded)."""

    max_tokens: Optional[int] = None
    max_pairs: Optional[int] = None


class VecoZipDataset(FairseqDataset):
    """The sub-datasets (``{"mono": ..., "bi": ...}``) side by side in one index
    space (dataset ``k`` owns ``[offset_k, offset_k + len_k)``).

    ``batch_by_size`` batches each sub-dataset on its own with its own
    ``SubBatchSize``, then zips the batch lists: batch ``j`` of an epoch holds
    sub-batch ``j`` of every sub-dataset, the shorter lists cycling (as
    ``RoundRobinZipDatasets``), so the epoch has as many updates as the longest
    list. The collated sample is ``{"mono": batch, "bi": batch}``.

    Sub-datasets truncate and skip bad pairs themselves (with counted warnings), so
    there is nothing left for ``--max-positions`` filtering to drop."""

    def __init__(
        self, datasets: "OrderedDict[str, FairseqDataset]", sizes: Dict[str, SubBatchSize]
    ):
        super().__init__()
        self.datasets = datasets
        self.batch_sizes = sizes
        lengths = [len(d) for d in datasets.values()]
        self.offsets = dict(zip(datasets, np.cumsum([0] + lengths[:-1]).tolist()))
        self._ends = np.cumsum(lengths)

    def __len__(self):
        return int(self._ends[-1])

    def _locate(self, index: int):
        part = int(np.searchsorted(self._ends, index, side="right"))
        key = list(self.datasets)[part]
        return key, index - self.offsets[key]

    def __getitem__(self, index):
        key, local = self._locate(index)
        return key, self.datasets[key][local]

    def collater(self, samples):
        if not samples:
            return None
        batch = OrderedDict()
        for key, dataset in self.datasets.items():
            mine = [item for k, item in samples if k == key]
            if mine:
                batch[key] = dataset.collater(mine)
        return batch

    def num_tokens(self, index):
        key, local = self._locate(index)
        return self.datasets[key].num_tokens(local)

    def size(self, index):
        key, local = self._locate(index)
        return self.datasets[key].size(local)

    def ordered_indices(self):
        return np.concatenate(
            [d.ordered_indices() + self.offsets[k] for k, d in self.datasets.items()]
        )

    def filter_indices_by_size(self, indices, max_positions=None):
        return indices, []

    def batch_by_size(
        self, indices, max_tokens=None, max_sentences=None, required_batch_size_multiple=1
    ) -> List[np.ndarray]:
        """Zipped sub-batches; ``max_tokens``/``max_sentences`` are unused: each
        sub-dataset has its own ``SubBatchSize`` (the task resolves them)."""
        per_part = []
        for key, dataset in self.datasets.items():
            start = self.offsets[key]
            local = indices[(indices >= start) & (indices < start + len(dataset))] - start
            local = local.astype(np.int64)
            size = self.batch_sizes[key]
            batches = data_utils.batch_by_size(
                local,
                dataset.num_tokens,
                num_tokens_vec=dataset.num_tokens_vec(local).astype(np.int64),
                max_tokens=size.max_tokens,
                max_sentences=size.max_pairs,
                required_batch_size_multiple=required_batch_size_multiple,
            )
            per_part.append([np.asarray(b) + start for b in batches])
        steps = max(len(b) for b in per_part)
        return [np.concatenate([b[j % len(b)] for b in per_part]) for j in range(steps)]

    def set_epoch(self, epoch):
        super().set_epoch(epoch)
        for dataset in self.datasets.values():
            dataset.set_epoch(epoch)

    @property
    def supports_prefetch(self):
        return False

    @property
    def can_reuse_epoch_itr_across_epochs(self):
        return False  # masks and language resampling change every epoch
