"""Languages concatenated and resampled (q_l ∝ p_l^α) for ``veco_pretraining``.

fairseq's ``ConcatDataset`` and ``ResamplingDataset`` with what batching by honest
token counts needs: ``num_tokens_vec`` through both (fairseq's ``ConcatDataset`` has
none and ``ResamplingDataset`` passes resampled positions on unmapped), and masks of
their own for repeated draws of a pair.
"""

import numpy as np
from fairseq.data import ConcatDataset, ResamplingDataset


class VecoConcatDataset(ConcatDataset):
    """Languages side by side; token costs are the parts' own."""

    def num_tokens_vec(self, indices):
        indices = np.asarray(indices)
        out = np.empty(len(indices), dtype=np.int64)
        part = np.searchsorted(self.cumulative_sizes, indices, side="right")
        for k, dataset in enumerate(self.datasets):
            start = self.cumulative_sizes[k - 1] if k else 0
            chosen = part == k
            out[chosen] = dataset.num_tokens_vec(indices[chosen] - start)
        return out

    def num_tokens(self, index):
        return int(self.num_tokens_vec([index])[0])


class VecoResamplingDataset(ResamplingDataset):
    """Item ``i`` of the epoch is the underlying pair ``_cur_indices[i]``, masked with
    the RNG stream of ``i`` itself, so a pair drawn twice in one epoch (upsampling)
    is masked twice independently. Deterministic given (seed, epoch), as fairseq's."""

    def __getitem__(self, index):
        return self.dataset.item(self._cur_indices.array[index], draw=index)

    def num_tokens_vec(self, indices):
        return self.dataset.num_tokens_vec(self._cur_indices.array[np.asarray(indices)])
