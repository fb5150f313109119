"""Pairs (x, y) of token sequences, masked on the fly, collated for two streams."""

import logging
import zlib
from typing import Any, Dict, List, Optional

import numpy as np
import torch
from fairseq.data import FairseqDataset, data_utils

from ..modules.pair_layout import Halves
from .masking import MaskingScheme
from .packing import RowCost, packed_concatenations, packed_pairs

logger = logging.getLogger(__name__)


class VecoPairDataset(FairseqDataset):
    """Item ``i`` pairs ``first[first_index[i]]`` with ``second[second_index[i]]``.

    * bilingual: ``first``/``second`` are the two sides, indices are ``0..N-1``;
    * monolingual: both are the same corpus and the pairs are adjacent segments
      ``(2k, 2k+1)`` (paper, footnote 9).

    Each side is truncated to ``max_len`` tokens (its final eos kept) and pairs
    with an empty side are dropped, both with a counted warning, never an error.
    Each side is masked independently by ``scheme`` with an RNG seeded by
    ``(seed, data set identity, epoch, draw)``: the identity is a hash of ``name``
    (so equal-length segments of two data sets get different masks) and ``draw``
    is the item's position in the epoch's (re)sampled order (so two copies of one
    pair drawn by ``VecoResamplingDataset`` get different masks). A side starts
    with ``bos`` (XLM-R layout).

    ``concat``: also collate the TLM concatenation ``x ‖ y`` (bilingual batches).
    ``links``: the word alignments of a bitext, indexed like ``first``
    (:class:`~veco_plugin.data.word_links.VecoWordLinks`): each item then carries its
    piece links and batches a ``links`` matrix (WEAM's A, eq. 5); links beyond a
    truncated side are dropped with a counted warning.
    ``pack``: several pairs to a row (``veco_plugin.data.packing``), rows of about
    ``max_len`` positions (``2 * max_len`` for the concatenations, as wide as a padded
    one can be), chosen by the cost ``pack`` holds; None: one pair a row, padded.
    Token cost of a pair = the padded positions its batch holds: ``2 * max(|x|, |y|)``
    for the stacked pair, ``+ 2 * max(|x|, |y|)`` (a bound on ``|x| + |y|``) for the
    concatenation, so a batch's padded tensors never exceed ``--max-tokens`` (packed
    rows hold no more positions than those).
    """

    def __init__(
        self,
        first,
        second,
        first_index: np.ndarray,
        second_index: np.ndarray,
        name: str,
        bos: int,
        max_len: int,
        scheme: MaskingScheme,
        seed: int = 1,
        shuffle: bool = True,
        concat: bool = True,
        links=None,
        pack: Optional[RowCost] = None,
    ):
        super().__init__()
        self.pack = pack
        self.first, self.second = first, second
        self.name, self.bos, self.max_len = name, bos, max_len
        self.scheme, self.seed, self.shuffle, self.concat = scheme, seed, shuffle, concat
        self.identity = zlib.crc32(name.encode("utf-8"))
        self.epoch = 1
        # +1 for the bos we prepend; an eos-only line is empty
        len_a = np.asarray(first.sizes)[first_index] + 1
        len_b = np.asarray(second.sizes)[second_index] + 1
        keep = (len_a > 2) & (len_b > 2)
        if not keep.all():
            logger.warning(
                "%s: skipping %d of %d pairs with an empty side", name, (~keep).sum(), len(keep)
            )
        too_long = ((len_a > max_len) | (len_b > max_len)) & keep
        if too_long.any():
            logger.warning(
                "%s: truncating %d pairs to %d tokens per side", name, too_long.sum(), max_len
            )
        self.first_index, self.second_index = first_index[keep], second_index[keep]
        self.lengths = np.stack(
            [np.minimum(len_a[keep], max_len), np.minimum(len_b[keep], max_len)], axis=1
        )
        self.sizes = self.lengths.max(axis=1)
        self.pad = scheme.pad_idx
        self.links = links
        if links is not None:
            self._count_dropped_links(np.flatnonzero(too_long[keep]))

    def _count_dropped_links(self, truncated: np.ndarray) -> None:
        """Warn once about the piece links that truncation drops (only truncated pairs
        can drop any, so only those are mapped here)."""
        dropped = sum(self._links(i)[1] for i in truncated)
        if dropped:
            logger.warning(
                "%s: dropping %d word-alignment piece links beyond %d tokens per side in "
                "%d truncated pairs",
                self.name,
                dropped,
                self.max_len,
                len(truncated),
            )

    def _links(self, index: int):
        """Piece links (m, 2) of pair ``index`` in its sides' positions, and the number
        dropped by truncation (see ``word_links.piece_links``)."""
        la, lb = self.lengths[index]
        line = self.first_index[index]
        return self.links.pieces(
            line, self.first[line], self.second[self.second_index[index]], la, lb
        )

    @classmethod
    def adjacent(cls, corpus, **kwargs) -> "VecoPairDataset":
        """Pairs of adjacent segments (2k, 2k+1) of one monolingual corpus."""
        evens = np.arange(0, len(corpus) - 1, 2)
        return cls(corpus, corpus, evens, evens + 1, **kwargs)

    @classmethod
    def parallel(cls, src, tgt, *, links=None, **kwargs) -> "VecoPairDataset":
        """Translation pairs; the two sides (and ``links``, one entry per line, if
        given) must be line-aligned."""
        index = np.arange(len(src))
        return cls(src, tgt, index, index, links=links, **kwargs)

    def __len__(self):
        return len(self.sizes)

    def set_epoch(self, epoch):
        self.epoch = epoch

    @property
    def can_reuse_epoch_itr_across_epochs(self):
        return False  # masks depend on the epoch

    def _side(self, tokens: torch.Tensor, length: int) -> np.ndarray:
        body = tokens.numpy()[: length - 2]
        return np.concatenate([[self.bos], body, tokens.numpy()[-1:]]).astype(np.int64)

    def __getitem__(self, index):
        return self.item(index, draw=index)

    def item(self, index: int, draw: int) -> Dict:
        """Pair ``index`` masked with the RNG stream of ``draw`` (see the class doc)."""
        rng = np.random.default_rng((self.seed, self.identity, self.epoch, draw))
        la, lb = self.lengths[index]
        x = self._side(self.first[self.first_index[index]], la)
        y = self._side(self.second[self.second_index[index]], lb)
        x_in, x_tgt = self.scheme.apply(x, rng)
        y_in, y_tgt = self.scheme.apply(y, rng)
        item = {"id": index, "x": x_in, "y": y_in, "x_target": x_tgt, "y_target": y_tgt}
        if self.links is not None:
            item["links"] = self._links(index)[0]
        return item

    def num_tokens(self, index):
        return int(self.num_tokens_vec(np.array([index]))[0])

    def num_tokens_vec(self, indices):
        return (4 if self.concat else 2) * self.sizes[indices]

    def size(self, index):
        return int(self.sizes[index])

    def ordered_indices(self):
        order = np.random.permutation(len(self)) if self.shuffle else np.arange(len(self))
        return order[np.argsort(self.sizes[order], kind="mergesort")]

    def collater(self, samples: List[Dict]) -> Optional[Dict]:
        """Returns a batch of B pairs:

        * ``pair_tokens``/``pair_target`` (2B, T): rows ``:B`` are x, ``B:`` are y
          (the two-stream layout of ``VecoModel.forward_two_stream``);
        * ``pair_masked``: the masked positions of ``pair_target`` (non-pad), a Python
          int (the LM head gathers that many rows without a device sync); ``pair_padded``:
          whether ``pair_tokens`` holds a pad (rows of unequal lengths; none: no mask);
        * with ``concat``: ``concat_tokens``/``concat_target`` (B, Tx+Ty): ``x ‖ y``
          for TLM, ``concat_masked`` / ``concat_padded`` likewise, and ``first_lengths``
          (B,) = |x| per row;
          and where each pair's sides lie in it: ``halves``, ``half_lengths``
          (:class:`~veco_plugin.modules.pair_layout.Halves`, W = the longest side);
        * when the pairs have word alignments: ``links`` (B, W, W) bool:
          ``links[b, i, j]`` = position ``i`` of x_b (``<s>`` at 0, as in
          ``pair_tokens[b]`` and the x half) is linked to position ``j`` of y_b; all
          False for a pair without alignments in a mixed batch.

        Packed (``pack``): ``pair_*`` (2R, T) and ``concat_*`` (R', T') hold several
        pairs a row, with ``<layout>_segments`` and ``<layout>_positions`` (and
        ``concat_reset_positions``, ``pair_first``: the x positions of the stacked
        rows, where a pair may lie turned), no ``*_padded`` or ``first_lengths``
        (:mod:`veco_plugin.data.packing`).
        """
        if not samples:
            return None
        if self.pack is not None:
            return self._packed(samples)

        def pad(seqs):
            return data_utils.collate_tokens([torch.from_numpy(s) for s in seqs], self.pad)

        xs, ys = [s["x"] for s in samples], [s["y"] for s in samples]
        xt, yt = [s["x_target"] for s in samples], [s["y_target"] for s in samples]
        batch = {
            "id": torch.LongTensor([s["id"] for s in samples]),
            "nsentences": len(samples),
            "ntokens": int(sum(len(x) + len(y) for x, y in zip(xs, ys))),
            "pair_tokens": pad(xs + ys),
            "pair_target": pad(xt + yt),
        }
        width = batch["pair_tokens"].size(1)
        batch["pair_masked"] = int(batch["pair_target"].ne(self.pad).sum())  # a CPU tensor
        batch["pair_padded"] = len({len(s) for s in xs + ys}) > 1
        if self.concat:
            batch["concat_tokens"] = pad([np.concatenate(p) for p in zip(xs, ys)])
            batch["concat_target"] = pad([np.concatenate(p) for p in zip(xt, yt)])
            batch["concat_masked"] = int(batch["concat_target"].ne(self.pad).sum())
            batch["concat_padded"] = len({len(x) + len(y) for x, y in zip(xs, ys)}) > 1
            batch["first_lengths"] = torch.LongTensor([len(x) for x in xs])
            lengths = batch["concat_tokens"].ne(self.pad).sum(1)
            halves = Halves.padded(
                batch["first_lengths"], lengths, batch["concat_tokens"].size(1), width
            )
            batch["halves"], batch["half_lengths"] = halves.index, halves.lengths
        if any("links" in s for s in samples):
            batch["links"] = self._collate_links(samples, width)
        return batch

    def _packed(self, samples: List[Dict]) -> Dict:
        """The collater's batch with several pairs a row."""
        assert self.pack is not None
        batch: Dict[str, Any] = {
            "id": torch.LongTensor([s["id"] for s in samples]),
            "nsentences": len(samples),
            "ntokens": int(sum(len(s["x"]) + len(s["y"]) for s in samples)),
            **packed_pairs(samples, self.max_len, self.pad, self.pack.position),
        }
        batch["pair_masked"] = int(batch["pair_target"].ne(self.pad).sum())
        width = max(max(len(s["x"]), len(s["y"])) for s in samples)
        if self.concat:
            batch.update(
                packed_concatenations(
                    samples, 2 * self.max_len, width, self.pad, self.pack.position
                )
            )
            batch["concat_masked"] = int(batch["concat_target"].ne(self.pad).sum())
        if any("links" in s for s in samples):
            batch["links"] = self._collate_links(samples, width)
        return batch

    @staticmethod
    def _collate_links(samples: List[Dict], width: int) -> torch.Tensor:
        """(B, W, W) bool from each sample's (m, 2) position links."""
        flat = [
            b * width * width + s["links"][:, 0] * width + s["links"][:, 1]
            for b, s in enumerate(samples)
            if "links" in s
        ]
        links = torch.zeros(len(samples) * width * width, dtype=torch.bool)
        if flat:
            links[torch.from_numpy(np.concatenate(flat))] = True
        return links.view(len(samples), width, width)
