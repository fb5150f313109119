"""``veco-derived-transfer --curve``: the regime curve. Per model, the models at its
budgets: tokens seen, passes over the pre-training text, SUP / ZS / Δ in F1 and the
alignment score, as OUT/curve.{md,json,png} (Δ and alignment against tokens seen).

Tokens seen and passes come from the pre-training's own log: fairseq's ``train_inner``
records (``--log-format json``, every :data:`LOG_INTERVAL` updates) give each interval's
mean tokens per update (``wpb``) and the epoch's progress (``update``: epochs done, a
fraction; an epoch is one pass over the training data). A resumed run logs the updates
after its last save twice: the later record wins.
"""

import json
import math
import os
from dataclasses import asdict, dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from .report import TRANSFORM_LABELS, Cell

LOG_INTERVAL = 50
"""the pre-training's ``--log-interval``: a curve's budgets are multiples of it."""
RECORD = "| train_inner | "


@dataclass(frozen=True)
class Progress:
    """How far a pre-training had come at an update."""

    tokens: float
    """tokens seen: the sum over the logged intervals of ``wpb`` x the interval's updates."""
    passes: float
    """epochs done (fairseq's ``update`` field): passes over the training data."""


def read_progress(log: str) -> Dict[int, Progress]:
    """update -> :class:`Progress` at every logged update of the fairseq log ``log``."""
    records: Dict[int, Tuple[float, float]] = {}
    with open(log, encoding="utf-8", errors="replace") as f:
        for line in f:
            at = line.find(RECORD)
            if at < 0:
                continue
            try:
                record = json.loads(line[at + len(RECORD) :])
                update = int(float(record["num_updates"]))  # fairseq prints 1e+06 from 1M on
                records[update] = (float(record["wpb"]), float(record["update"]))
            except (ValueError, KeyError, TypeError):
                continue
    progress: Dict[int, Progress] = {}
    tokens, before = 0.0, 0
    for update in sorted(records):
        wpb, epochs = records[update]
        tokens += wpb * (update - before)
        before = update
        progress[update] = Progress(tokens, epochs)
    return progress


@dataclass(frozen=True)
class Point:
    """One model of the curve: ``cell``'s scores after ``updates`` pre-training updates."""

    updates: int
    cell: Cell
    progress: Optional[Progress]
    """None when the log has no record at ``updates``."""


def _or_dash(value: Optional[float], form: str) -> str:
    return "-" if value is None or math.isnan(value) else format(value, form)


def markdown(points: Sequence[Point], notes: Sequence[str] = ()) -> str:
    """One row per model and budget: updates, tokens seen, passes, F1 SUP / ZS / Δ, Δ
    accuracy, alignment (%); then where Δ first falls below 10 per model."""
    lines = [
        "| transformation | objective | updates | tokens seen (M) | passes | SUP / ZS / Δ (F1) "
        "| Δ acc. | alignment (%) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for p in points:
        c, g = p.cell, p.progress
        tokens = None if g is None else g.tokens / 1e6
        passes = None if g is None else g.passes
        lines.append(
            f"| {TRANSFORM_LABELS.get(c.transform, c.transform)} | {c.label} | {p.updates} | "
            f"{_or_dash(tokens, '.1f')} | {_or_dash(passes, '.2f')} | "
            f"{c.sup:.1f} / {c.zs:.1f} / {c.delta:.1f} | {c.delta_accuracy:.1f} | "
            f"{_or_dash(100 * c.alignment, '.1f')} |"
        )
    lines.append("")
    for (transform, label), mine in _series(points).items():
        below = [p for p in mine if p.cell.delta < 10]
        where = (
            f"Δ falls below 10 at {below[0].updates} updates"
            if below
            else f"Δ stays at 10 or above up to {mine[-1].updates} updates"
        )
        lines.append(f"{TRANSFORM_LABELS.get(transform, transform)}, {label}: {where}")
    lines += [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def _series(points: Sequence[Point]) -> Dict[tuple, List[Point]]:
    series: Dict[tuple, List[Point]] = {}
    for p in points:
        series.setdefault((p.cell.transform, p.cell.label), []).append(p)
    return {k: sorted(v, key=lambda p: p.updates) for k, v in series.items()}


def plot(points: Sequence[Point], path: str) -> None:
    """Δ (F1, left axis) and alignment (%, right axis), both on 0-100, against tokens seen
    (log scale; the updates where a point has no logged tokens), one line pair per model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, left = plt.subplots(figsize=(6.5, 4.5))
    right = left.twinx()
    known = all(p.progress is not None for p in points)
    for (transform, label), mine in _series(points).items():
        x = [p.progress.tokens if known and p.progress else p.updates for p in mine]
        name = f"{TRANSFORM_LABELS.get(transform, transform)} {label}"
        left.plot(x, [p.cell.delta for p in mine], "o-", label=f"Δ F1, {name}")
        right.plot(x, [100 * p.cell.alignment for p in mine], "s--", label=f"alignment, {name}")
    deltas = [p.cell.delta for p in points]
    left.set_ylim(min(0.0, min(deltas)), max(100.0, max(deltas)))  # percents, 0 to 100
    right.set_ylim(0, 100)
    left.set_xscale("log")
    left.set_xlabel("tokens seen in pre-training" if known else "pre-training updates")
    left.set_ylabel("Δ = SUP − ZS (POS F1)")
    right.set_ylabel("alignment score (%)")
    left.axhline(10, color="grey", linewidth=0.6, linestyle=":")
    handles = left.get_legend_handles_labels()
    more = right.get_legend_handles_labels()
    left.legend(handles[0] + more[0], handles[1] + more[1], fontsize=7, loc="best")
    left.set_title("the regime: transfer and alignment against pre-training")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write(out: str, points: Sequence[Point], about: Mapping, notes: Sequence[str] = ()) -> str:
    """OUT/curve.{md,json,png}; returns the markdown."""
    text = markdown(points, notes)
    with open(os.path.join(out, "curve.md"), "w", encoding="utf-8") as f:
        f.write(text)
    payload = {
        "points": [
            {
                "updates": p.updates,
                "tokens": p.progress.tokens if p.progress else None,
                "passes": p.progress.passes if p.progress else None,
                **asdict(p.cell),
                "delta": p.cell.delta,
                "delta_accuracy": p.cell.delta_accuracy,
            }
            for p in points
        ],
        "notes": list(notes),
        **about,
    }
    with open(os.path.join(out, "curve.json"), "w", encoding="utf-8") as f:
        json.dump(payload, f, indent=2, ensure_ascii=False)
        f.write("\n")
    plot(points, os.path.join(out, "curve.png"))
    return text
