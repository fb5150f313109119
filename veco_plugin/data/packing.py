"""Several pairs to a row: the packed layouts of a batch of pairs (x, y).

A batch of B pairs padded one pair to a row pads each side to the batch's longest:
on sentence-per-line text, adjacent lines (VECO's monolingual pairs, footnote 9) are
of independent lengths, and 13-16 % of the positions were pad. Packed, a row holds
several pairs, each a *segment*: attention stays inside a segment
(``veco_plugin.modules.segments``), positions restart at each one, and the losses,
which read masked positions, are those of the same pairs padded.

* **Stacked** (VECO's two streams, and MLM on each side): (2R, T); rows ``r`` and
  ``R + r`` hold the two sides of the same pairs, one side of each pair in each row
  and in the same order: the pair's segment number is the same in both rows, so the S
  stream of each side attends to its own partner.
* **Concatenated** (TLM, XLM-Align, WEAM): (R, T), each segment one ``x ‖ y``.

Segments are numbered 1, 2, ... along a row; pad is segment 0.
"""

import heapq
from typing import Dict, List, Sequence, Tuple

import numpy as np
import torch

Item = Tuple[int, bool]
"""An item's index, and whether it was turned (its sizes swapped)."""


def partition(totals: np.ndarray, rows: int, partners: int = 1) -> np.ndarray:
    """Items of sizes ``totals`` (N,) into ``rows`` rows of sums as even as greedy can
    make them: longest first, each to the emptiest row (the longest-processing-time
    rule of scheduling); then, while it lowers the fullest row and that row is above the
    mean, the move of one of its items, or the exchange for a shorter one, to one of the
    ``partners`` emptiest rows (at most ``2 * rows`` of them, 64 at most: the work stays
    near linear in N). Returns each item's row (N,)."""
    row_of = np.zeros(len(totals), dtype=np.int64)
    heap = [(0, r) for r in range(rows)]
    for item in np.argsort(-totals, kind="stable"):
        total, row = heapq.heappop(heap)
        row_of[item] = row
        heapq.heappush(heap, (total + int(totals[item]), row))
    sums = np.bincount(row_of, weights=totals, minlength=rows).astype(np.int64)
    mean = -(-int(totals.sum()) // rows)
    for _ in range(min(2 * rows, 64)):
        full = int(sums.argmax())
        if sums[full] <= mean:
            break
        mine = np.flatnonzero(row_of == full)
        best = None
        for other in np.argsort(sums, kind="stable")[:partners]:
            if other == full:
                continue
            theirs = np.flatnonzero(row_of == other)
            # what the full row gives away: item i for item j, or item i alone
            gains = totals[mine][:, None] - np.append(totals[theirs], 0)[None, :]
            useful = (gains > 0) & (gains < sums[full] - sums[other])
            if not useful.any():
                continue
            fullest = np.where(
                useful, np.maximum(sums[full] - gains, sums[other] + gains), sums[full]
            )
            k = np.unravel_index(int(fullest.argmin()), fullest.shape)
            if best is None or fullest[k] < best[0]:
                best = (fullest[k], other, mine[k[0]], theirs[k[1]] if k[1] < len(theirs) else None)
        if best is None:
            break
        _, other, given, taken = best
        row_of[given] = other
        sums[full] -= totals[given]
        sums[other] += totals[given]
        if taken is not None:
            row_of[taken] = full
            sums[other] -= totals[taken]
            sums[full] += totals[taken]
    return row_of


def turned_rows(sizes: np.ndarray, row_of: np.ndarray, rows: int) -> Tuple[List[List[Item]], int]:
    """Each row's stacked pairs ``sizes`` (N, 2), the pairs with the most unequal sides
    first, each turned or not so that its longer side goes to the row's shorter half.
    Returns the rows and the width (the longest half)."""
    placed: List[List[Item]] = []
    width = 0
    for row in range(rows):
        upper = lower = 0
        items: List[Item] = []
        for item in sorted(
            np.flatnonzero(row_of == row), key=lambda i: -abs(sizes[i, 0] - sizes[i, 1])
        ):
            x, y = int(sizes[item, 0]), int(sizes[item, 1])
            turned = (x >= y) != (upper <= lower)
            upper, lower = (upper + y, lower + x) if turned else (upper + x, lower + y)
            items.append((int(item), turned))
        placed.append(items)
        width = max(width, upper, lower)
    return placed, width


def packed_rows(sizes: np.ndarray, capacity: int, tries: int = 2) -> Tuple[List[List[Item]], int]:
    """Rows about ``capacity`` wide of items ``sizes``: (N, 1) concatenated pairs, or
    (N, 2) stacked pairs (which may lie turned: :func:`turned_rows`).

    Row counts tried: the fewest that could hold the items in rows of ``capacity`` and
    the next ``tries - 1``; those of one, two and three items a row when no fewer. The
    rows that hold the fewest positions (rows x width) win, the narrower on a tie; one
    item a row among them, packing never pads more than padding would. A row may come
    out a little wider than ``capacity``; no segment does (each side is at most
    ``capacity``). Returns the rows, each ``(item, turned)`` in the order of its
    segments, and their width."""
    totals = sizes.sum(axis=1)
    fewest = min(int(np.ceil(totals.sum() / sizes.shape[1] / capacity)), len(sizes))
    counts = set(range(max(fewest, 1), min(fewest + tries - 1, len(sizes)) + 1))
    counts |= {c for c in (-(-len(sizes) // k) for k in (1, 2, 3)) if c >= fewest}
    best: Tuple[int, int, List[List[Item]]] = (-1, 0, [])
    for count in sorted(counts):
        row_of = partition(totals, count)
        if sizes.shape[1] == 2:
            rows, width = turned_rows(sizes, row_of, count)
        else:
            rows = [[(int(i), False) for i in np.flatnonzero(row_of == r)] for r in range(count)]
            width = int(np.bincount(row_of, weights=totals, minlength=count).max())
        if best[0] < 0 or (count * width, width) < best[:2]:
            best = (count * width, width, rows)
    return best[2], best[1]


class RowWriter:
    """Rows of width ``width`` filled left to right with segments: tokens, targets,
    segment numbers and positions (fairseq's: the first of a segment is ``pad + 1``),
    both running on across a segment's parts (``positions``) and restarting at each part
    (``part_positions``: XLM's TLM)."""

    def __init__(self, rows: int, width: int, pad: int):
        self.tokens = np.full((rows, width), pad, dtype=np.int64)
        self.target = np.full((rows, width), pad, dtype=np.int64)
        self.segments = np.zeros((rows, width), dtype=np.int64)
        self.positions = np.full((rows, width), pad, dtype=np.int64)
        self.part_positions = np.full((rows, width), pad, dtype=np.int64)
        self.ends = np.zeros(rows, dtype=np.int64)
        self.pad = pad

    def put(self, row: int, segment: int, parts: Sequence[Tuple[np.ndarray, np.ndarray]]) -> int:
        """Append one segment, the ``(tokens, target)`` parts one after the other, to
        ``row``. Returns the segment's first column."""
        start = self.ends[row]
        column = start
        for tokens, target in parts:
            end = column + len(tokens)
            self.tokens[row, column:end] = tokens
            self.target[row, column:end] = target
            self.positions[row, column:end] = self.pad + 1 + np.arange(column - start, end - start)
            self.part_positions[row, column:end] = self.pad + 1 + np.arange(end - column)
            column = end
        self.segments[row, start:column] = segment
        self.ends[row] = column
        return int(start)

    def tensors(self, prefix: str) -> Dict[str, torch.Tensor]:
        return {
            f"{prefix}_tokens": torch.from_numpy(self.tokens),
            f"{prefix}_target": torch.from_numpy(self.target),
            f"{prefix}_segments": torch.from_numpy(self.segments),
            f"{prefix}_positions": torch.from_numpy(self.positions),
        }


def packed_pairs(samples: List[Dict], capacity: int, pad: int) -> Dict[str, torch.Tensor]:
    """The stacked layout (see the module doc) of ``samples`` (``x``, ``y``,
    ``x_target``, ``y_target``), rows about ``capacity`` wide (:func:`packed_rows`).

    A pair may lie turned, its y in the upper row and its x in the lower: VECO's two
    streams treat the sides alike (each attends to the other's H^L), and turning is
    what evens the rows when one side is the longer (German beside English); which
    positions are an x is in ``pair_first``.

    Returns ``pair_tokens``, ``pair_target``, ``pair_segments``, ``pair_positions``
    (2R, T), T the widest row, and ``pair_first`` (2R, T) bool: the positions of an x.
    """
    sizes = np.array([(len(s["x"]), len(s["y"])) for s in samples], dtype=np.int64)
    rows, width = packed_rows(sizes, capacity)
    out = RowWriter(2 * len(rows), width, pad)
    first = np.zeros((2 * len(rows), width), dtype=bool)
    for r, row in enumerate(rows):
        for segment, (i, turned) in enumerate(row, start=1):
            s = samples[i]
            x_row, y_row = (len(rows) + r, r) if turned else (r, len(rows) + r)
            start = out.put(x_row, segment, [(s["x"], s["x_target"])])
            first[x_row, start : start + len(s["x"])] = True
            out.put(y_row, segment, [(s["y"], s["y_target"])])
    batch = out.tensors("pair")
    batch["pair_first"] = torch.from_numpy(first)
    return batch


def packed_concatenations(
    samples: List[Dict], capacity: int, width: int, pad: int
) -> Dict[str, torch.Tensor]:
    """The concatenated layout (see the module doc) of ``samples``, rows of at most
    about ``capacity`` wide (:func:`packed_rows`).

    Returns ``concat_tokens``, ``concat_target``, ``concat_segments``,
    ``concat_positions`` (R, T: positions run on across ``x ‖ y``, VECO's),
    ``concat_reset_positions`` (restarting at y, XLM's), and where each pair's sides
    lie: ``halves`` (2, B, W) long, ``halves[0, b, j]`` the flat position
    (``row * T + column``) of x_b's j-th token, ``halves[1]`` y_b's, for j < |side|
    (past it: the pair's last position, which callers mask by ``half_lengths``);
    ``half_lengths`` (2, B) = |x|, |y|. ``width`` is W (at least every side's length).
    """
    lengths = np.array([(len(s["x"]), len(s["y"])) for s in samples], dtype=np.int64)
    totals = lengths.sum(axis=1, keepdims=True)
    rows, row_width = packed_rows(totals, capacity)
    out = RowWriter(len(rows), row_width, pad)
    starts = np.zeros(len(samples), dtype=np.int64)
    for r, row in enumerate(rows):
        for segment, (i, _) in enumerate(row, start=1):
            s = samples[i]
            parts = [(s["x"], s["x_target"]), (s["y"], s["y_target"])]
            starts[i] = r * row_width + out.put(r, segment, parts)
    steps = np.arange(width)
    last = starts[:, None] + totals - 1
    x = np.minimum(starts[:, None] + steps, last)
    y = np.minimum(starts[:, None] + lengths[:, :1] + steps, last)
    batch = out.tensors("concat")
    batch["concat_reset_positions"] = torch.from_numpy(out.part_positions)
    batch["halves"] = torch.from_numpy(np.stack([x, y]))
    batch["half_lengths"] = torch.from_numpy(np.ascontiguousarray(lengths.T))
    return batch
