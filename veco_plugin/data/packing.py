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
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

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
    first, each turned or not so that its longer side goes to the row's shorter half;
    then :func:`evened_halves`. Returns the rows and the width (the longest half)."""
    turned = np.zeros(len(sizes), dtype=bool)
    for row in range(rows):
        upper = lower = 0
        for item in sorted(
            np.flatnonzero(row_of == row), key=lambda i: -abs(sizes[i, 0] - sizes[i, 1])
        ):
            x, y = int(sizes[item, 0]), int(sizes[item, 1])
            turned[item] = (x >= y) != (upper <= lower)
            upper, lower = (upper + y, lower + x) if turned[item] else (upper + x, lower + y)
    row_of, turned = evened_halves(sizes, row_of.copy(), turned, rows)
    halves = np.where(turned[:, None], sizes[:, ::-1], sizes)
    width = int(
        max(np.bincount(row_of, weights=halves[:, h], minlength=rows).max() for h in (0, 1))
    )
    placed = [[(int(i), bool(turned[i])) for i in np.flatnonzero(row_of == r)] for r in range(rows)]
    return placed, width


def evened_halves(
    sizes: np.ndarray, row_of: np.ndarray, turned: np.ndarray, rows: int, rounds: int = 64
) -> Tuple[np.ndarray, np.ndarray]:
    """Local search on the stacked rows' width, the longest half of any row: while it
    lowers the widest row's longest half without making another row as wide, one of that
    row's pairs is turned, moved to another row (either way round) or exchanged for a
    pair of one of the eight narrowest rows (each either way round); the best such step
    each round, at most ``rounds`` rounds. ``sizes`` (N, 2); ``row_of`` (N,) and
    ``turned`` (N,) bool are the start and come back changed."""
    for _ in range(rounds):
        halves = np.where(turned[:, None], sizes[:, ::-1], sizes)  # (N, 2) upper, lower
        sums = np.stack(
            [np.bincount(row_of, weights=halves[:, h], minlength=rows) for h in (0, 1)], 1
        )
        longest = sums.max(1)
        widest = int(longest.argmax())
        width = longest[widest]
        mine = np.flatnonzero(row_of == widest)
        narrow = np.argsort(longest, kind="stable")[:8]
        theirs = np.flatnonzero(np.isin(row_of, narrow[narrow != widest]))
        kept = sums[widest] - halves[mine]  # (k, 2): the widest row without each pair
        ways = np.stack([halves, halves[:, ::-1]], 1)  # (N, 2 ways, 2 halves)
        # (the wider of the two rows after it, pair, its way, other row, other pair, its way)
        steps: List[Tuple[float, int, int, int, int, int]] = []
        # turning a pair of the widest row
        turn = np.maximum(kept[:, 0] + halves[mine, 1], kept[:, 1] + halves[mine, 0])
        steps += [(float(turn[a]), int(mine[a]), 1, widest, -1, 0) for a in range(len(mine))]
        # moving a pair (either way) to another row, or exchanging it for one of theirs
        for way in (0, 1):
            given = ways[mine, way]  # (k, 2)
            moved = np.maximum(
                kept.max(1)[:, None],
                np.maximum(sums[None, :, 0] + given[:, :1], sums[None, :, 1] + given[:, 1:]),
            )  # (k, R)
            moved[:, widest] = np.inf
            a, row = np.unravel_index(int(moved.argmin()), moved.shape)
            steps.append((float(moved[a, row]), int(mine[a]), way, int(row), -1, 0))
            left = sums[row_of[theirs]] - halves[theirs]  # (m, 2): their rows without them
            for back in (0, 1):
                taken = ways[theirs, back]  # (m, 2)
                after = np.maximum.reduce(
                    [
                        kept[:, None, 0] + taken[None, :, 0],
                        kept[:, None, 1] + taken[None, :, 1],
                        left[None, :, 0] + given[:, None, 0],
                        left[None, :, 1] + given[:, None, 1],
                    ]
                )  # (k, m)
                if after.size:
                    a, b = np.unravel_index(int(after.argmin()), after.shape)
                    steps.append(
                        (
                            float(after[a, b]),
                            int(mine[a]),
                            way,
                            int(row_of[theirs[b]]),
                            int(theirs[b]),
                            back,
                        )
                    )
        best = min(steps, key=lambda step: step[0])
        if best[0] >= width:
            break
        _, item, way, to_row, other, back = best
        row_of[item], turned[item] = to_row, turned[item] != bool(way)
        if other >= 0:
            row_of[other], turned[other] = widest, turned[other] != bool(back)
    return row_of, turned


def packed_rows(
    sizes: np.ndarray, capacity: int, position_cost: Optional[float] = None
) -> Tuple[List[List[Item]], int]:
    """Rows of items ``sizes``: (N, 1) concatenated pairs, or (N, 2) stacked pairs (which
    may lie turned: :func:`turned_rows`), about ``capacity`` wide, up to half as wide again.

    Row counts tried: the fewest that could hold the items in rows of ``1.5 * capacity``
    and the next two; those of one to eight items a row, when no fewer. The cheapest rows
    win, the narrower on a tie: R rows of width W cost ``R * W * (c + W)``,
    ``c = position_cost`` (:func:`position_cost`: the attention's work grows with the
    row's width, the linear maps' does not); without it, the fewest positions
    ``R * W``. One item a row is among them, so packing never computes more positions
    (nor costs more) than padding would. No segment is wider than ``capacity`` (each
    side is at most that). Returns the rows, each ``(item, turned)`` in the order of its
    segments, and their width."""
    totals = sizes.sum(axis=1)
    fewest = min(int(np.ceil(totals.sum() / sizes.shape[1] / (1.5 * capacity))), len(sizes))
    counts = set(range(max(fewest, 1), min(fewest + 2, len(sizes)) + 1))
    counts |= {c for c in (-(-len(sizes) // k) for k in range(1, 9)) if c >= fewest}
    per = sizes.shape[1]

    def cost(count: int, width: int) -> float:
        return count * width * (1.0 if position_cost is None else position_cost + width)

    def floor(count: int) -> int:  # no row of ``count`` is narrower
        return max(-(-int(totals.sum()) // (per * count)), int(sizes.max()))

    best: Tuple[float, int, List[List[Item]]] = (np.inf, 0, [])
    for count in sorted(counts, key=lambda c: (cost(c, floor(c)), floor(c))):
        if (cost(count, floor(count)), floor(count)) >= best[:2]:
            break  # nor can any later one beat it
        row_of = partition(totals, count)
        if per == 2:
            rows, width = turned_rows(sizes, row_of, count)
        else:
            rows = [[(int(i), False) for i in np.flatnonzero(row_of == r)] for r in range(count)]
            width = int(np.bincount(row_of, weights=totals, minlength=count).max())
        if (cost(count, width), width) < best[:2]:
            best = (cost(count, width), width, rows)
    return best[2], best[1]


@dataclass
class RowCost:
    """What the packed rows of a data set are weighed by: :func:`packed_rows`'
    ``position_cost``, set once the model is built (the task's ``build_model``, before
    any batch is collated); None until then: the fewest positions."""

    position: Optional[float] = None


def position_cost(embed_dim: int, ffn_dim: int) -> float:
    """A position's multiply-adds in a layer's linear maps (``4 d^2`` for the query, key,
    value and output projections, ``2 d f`` for the FFN) over those of its attention per
    key it attends to (``2 d``: a row of scores and a row of the weighted sum): ``2 d + f``.
    A row W wide costs ``W (2 d + f + W)`` a layer, so wide rows pay for less pad only
    up to a point, nearer for small models."""
    return 2.0 * embed_dim + ffn_dim


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


def packed_pairs(
    samples: List[Dict], capacity: int, pad: int, position_cost: Optional[float] = None
) -> Dict[str, torch.Tensor]:
    """The stacked layout (see the module doc) of ``samples`` (``x``, ``y``,
    ``x_target``, ``y_target``), rows about ``capacity`` wide (:func:`packed_rows`, with
    ``position_cost``).

    A pair may lie turned, its y in the upper row and its x in the lower: VECO's two
    streams treat the sides alike (each attends to the other's H^L), and turning is
    what evens the rows when one side is the longer (German beside English); which
    positions are an x is in ``pair_first``.

    Returns ``pair_tokens``, ``pair_target``, ``pair_segments``, ``pair_positions``
    (2R, T), T the widest row, and ``pair_first`` (2R, T) bool: the positions of an x.
    """
    sizes = np.array([(len(s["x"]), len(s["y"])) for s in samples], dtype=np.int64)
    rows, width = packed_rows(sizes, capacity, position_cost)
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
    samples: List[Dict],
    capacity: int,
    width: int,
    pad: int,
    position_cost: Optional[float] = None,
) -> Dict[str, torch.Tensor]:
    """The concatenated layout (see the module doc) of ``samples``, rows about
    ``capacity`` wide (:func:`packed_rows`, with ``position_cost``).

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
    rows, row_width = packed_rows(totals, capacity, position_cost)
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
