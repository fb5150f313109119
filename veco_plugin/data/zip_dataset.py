"""One monolingual and one bilingual sub-batch per update, each of its own size."""

from collections import OrderedDict
from dataclasses import dataclass
from typing import Dict, List, Optional

import numpy as np
from fairseq.data import FairseqDataset, data_utils

from ..errors import VecoUserError


@dataclass(frozen=True)
class SubBatchSize:
    """Bounds of one sub-batch: padded tokens and pairs (None: unbounded)."""

    max_tokens: Optional[int] = None
    max_pairs: Optional[int] = None


def sub_batch_sizes(
    parts: List[str],
    max_tokens: Optional[int],
    max_sentences: Optional[int],
    own_tokens: Dict[str, Optional[int]],
    own_pairs: Dict[str, Optional[int]],
) -> Dict[str, SubBatchSize]:
    """Each sub-batch's bounds. ``max_tokens`` (``--max-tokens``, or
    ``--max-tokens-valid`` in validation) bounds a whole update: sub-batches
    with their own ``--{mono,bi}-max-tokens`` keep it, the others share what is left
    equally (the paper's two sub-batches hold equal token counts); ``--batch-size``
    bounds the pairs of each sub-batch without its own ``--{mono,bi}-batch-size``."""
    fixed = sum(own_tokens.get(k) or 0 for k in parts)
    rest = [k for k in parts if not own_tokens.get(k)]
    share = None
    if max_tokens is not None and rest:
        share = (max_tokens - fixed) // len(rest)
    if max_tokens is not None and (fixed > max_tokens or share is not None and share <= 0):
        given = " + ".join(f"--{k}-max-tokens {own_tokens[k]}" for k in parts if own_tokens.get(k))
        raise VecoUserError(
            f"{given} leave no room in --max-tokens {max_tokens}, which bounds a whole update "
            f"(every sub-batch): raise --max-tokens to at least {fixed + len(rest)}"
        )
    return {
        k: SubBatchSize(
            max_tokens=own_tokens.get(k) or share, max_pairs=own_pairs.get(k) or max_sentences
        )
        for k in parts
    }


class VecoZipDataset(FairseqDataset):
    """The sub-datasets (``{"mono": ..., "bi": ...}``) side by side in one index
    space (dataset ``k`` owns ``[offset_k, offset_k + len_k)``).

    ``batch_by_size`` batches each sub-dataset on its own with its own
    ``SubBatchSize`` (``sub_batch_sizes`` of fairseq's ``max_tokens`` /
    ``max_sentences`` and the sub-datasets' ``own_tokens`` / ``own_pairs``), then zips
    the batch lists: batch ``j`` of an epoch holds sub-batch ``j`` of every
    sub-dataset, the shorter lists cycling (as
    ``RoundRobinZipDatasets``), so the epoch has as many updates as the longest
    list. The collated sample is ``{"mono": batch, "bi": batch}``.

    Sub-datasets truncate and skip bad pairs themselves (with counted warnings), so
    there is nothing left for ``--max-positions`` filtering to drop."""

    def __init__(
        self,
        datasets: "OrderedDict[str, FairseqDataset]",
        own_tokens: Dict[str, Optional[int]],
        own_pairs: Dict[str, Optional[int]],
    ):
        super().__init__()
        self.datasets = datasets
        self.own_tokens, self.own_pairs = own_tokens, own_pairs
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
        """Zipped sub-batches, each within its ``SubBatchSize``."""
        sizes = sub_batch_sizes(
            list(self.datasets), max_tokens, max_sentences, self.own_tokens, self.own_pairs
        )
        per_part = []
        for key, dataset in self.datasets.items():
            start = self.offsets[key]
            local = indices[(indices >= start) & (indices < start + len(dataset))] - start
            local = local.astype(np.int64)
            size = sizes[key]
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
