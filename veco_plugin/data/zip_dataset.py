"""One monolingual and one bilingual sub-batch per update, each of its own size."""

from collections import OrderedDict
from dataclasses import dataclass
from functools import partial
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
        subject = f"{given} leave no room in" if given else "no token per sub-batch in"
        raise VecoUserError(
            f"{subject} --max-tokens {max_tokens}, which bounds a whole update "
            f"(every sub-batch): raise --max-tokens to at least {fixed + len(rest)}"
        )
    return {
        k: SubBatchSize(
            max_tokens=own_tokens.get(k) or share, max_pairs=own_pairs.get(k) or max_sentences
        )
        for k in parts
    }


def check_longest_fits(
    key: str,
    longest: int,
    parts: List[str],
    max_tokens: Optional[int],
    own_tokens: Dict[str, Optional[int]],
) -> None:
    """Refuse (naming the flags) a sub-batch bound below sub-dataset ``key``'s longest
    pair of ``longest`` padded tokens: fairseq's batching would stop on an assertion."""
    own = own_tokens.get(key)
    shared = [k for k in parts if not own_tokens.get(k)]
    fixed = sum(own_tokens.get(k) or 0 for k in parts)
    budget = own or (None if max_tokens is None else (max_tokens - fixed) // len(shared))
    if budget is None or longest <= budget:
        return
    if own:
        where, fix = f"--{key}-max-tokens {own}", f"raise it to at least {longest}"
    else:
        where = f"the {budget} tokens that --max-tokens {max_tokens} leaves its sub-batch" + (
            f" (split equally between {len(shared)})" if len(shared) > 1 else ""
        )
        fix = (
            f"raise --max-tokens to at least {fixed + longest * len(shared)} "
            f"(or give --{key}-max-tokens)"
        )
    side = {"mono": "monolingual", "bi": "bilingual"}.get(key, key)
    raise VecoUserError(
        f"a {side} pair of {longest} tokens does not fit in {where}: {fix}, or lower "
        f"--max-{key}-positions"
    )


class VecoZipDataset(FairseqDataset):
    """The sub-datasets (``{"mono": ..., "bi": ...}``) side by side in one index
    space (dataset ``k`` owns ``[offset_k, offset_k + len_k)``).

    ``batch_by_size`` batches each sub-dataset on its own with its own
    ``SubBatchSize`` (``sub_batch_sizes`` of fairseq's ``max_tokens`` /
    ``max_sentences`` and the sub-datasets' ``own_tokens`` / ``own_pairs``), then zips
    the batch lists: batch ``j`` of an epoch holds sub-batch ``j`` of every
    sub-dataset, so the epoch has as many updates as the longest list. A shorter
    list repeats whole, then its last, partial pass batches a uniform random subset
    of the sub-dataset's pairs (drawn from ``seed`` and the epoch, size-sorted like
    the list), so its languages keep their shares q_l (repeating the first batches of
    the size-sorted list would repeat its shortest pairs, and the languages of short
    segments). The collated sample is ``{"mono": batch, "bi": batch}``.

    Sub-datasets truncate and skip bad pairs themselves (with counted warnings), so
    there is nothing left for ``--max-positions`` filtering to drop."""

    def __init__(
        self,
        datasets: "OrderedDict[str, FairseqDataset]",
        own_tokens: Dict[str, Optional[int]],
        own_pairs: Dict[str, Optional[int]],
        seed: int = 1,
    ):
        super().__init__()
        self.datasets = datasets
        self.seed, self.epoch = seed, 1
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
        batchers, local, per_part = {}, {}, {}
        for key, dataset in self.datasets.items():
            start = self.offsets[key]
            mine = indices[(indices >= start) & (indices < start + len(dataset))] - start
            local[key] = mine.astype(np.int64)
            if len(local[key]):
                longest = int(dataset.num_tokens_vec(local[key]).max())
                check_longest_fits(key, longest, list(self.datasets), max_tokens, self.own_tokens)
            batchers[key] = partial(
                self._batch, key, size=sizes[key], multiple=required_batch_size_multiple
            )
            per_part[key] = batchers[key](local[key])
        steps = max(len(b) for b in per_part.values())
        for k, (key, batches) in enumerate(per_part.items()):
            passes, rest = divmod(steps, len(batches))
            rng = np.random.default_rng((self.seed, self.epoch, k))
            tail = _sample_batches(local[key], batchers[key], rest, rng) if rest else []
            per_part[key] = batches * passes + tail
        return [np.concatenate(b) for b in zip(*per_part.values())]

    def _batch(self, key, order, size: SubBatchSize, multiple: int) -> List[np.ndarray]:
        """Sub-dataset ``key``'s pairs ``order`` (local indices) in batches, in that order
        (global indices)."""
        dataset = self.datasets[key]
        batches = data_utils.batch_by_size(
            order,
            dataset.num_tokens,
            num_tokens_vec=dataset.num_tokens_vec(order).astype(np.int64),
            max_tokens=size.max_tokens,
            max_sentences=size.max_pairs,
            required_batch_size_multiple=multiple,
        )
        return [np.asarray(b) + self.offsets[key] for b in batches]

    def set_epoch(self, epoch):
        super().set_epoch(epoch)
        self.epoch = epoch
        for dataset in self.datasets.values():
            dataset.set_epoch(epoch)

    @property
    def supports_prefetch(self):
        return False

    @property
    def can_reuse_epoch_itr_across_epochs(self):
        return False  # masks and language resampling change every epoch


def _sample_batches(local, batch, count, rng):
    """``count`` batches of a uniform random subset of ``local`` (its size order kept):
    a shortest prefix of a random permutation that makes ``count`` batches; a surplus
    batch (rare: greedy batching can gain two) is dropped at random."""
    positions = rng.permutation(len(local))
    low, high = 0, len(local)  # batches of the first `high` positions >= count
    while high - low > 1:
        mid = (low + high) // 2
        if len(batch(local[np.sort(positions[:mid])])) >= count:
            high = mid
        else:
            low = mid
    batches = batch(local[np.sort(positions[:high])])
    keep = np.sort(rng.choice(len(batches), count, replace=False))
    return [batches[i] for i in keep]
