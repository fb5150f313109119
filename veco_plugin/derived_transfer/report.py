"""``veco-derived-transfer``'s results: the paper's Table 3 (per transformation: SUP, ZS
and Δ = SUP − ZS per objective; lower Δ is better transfer), the alignment score of each
model, the Spearman correlation between alignment and Δ and Figure 2's scatter, as
OUT/results.{md,json,png}.

Spearman's ρ is Pearson's correlation of the ranks, ties given their average rank
(:func:`average_ranks`); with no variation in either list it is undefined (None).
"""

import json
import math
import os
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence

TRANSFORM_LABELS = {"trans": "T_trans", "inv": "T_inv", "trans_inv": "T_trans∘T_inv"}


@dataclass(frozen=True)
class Cell:
    """One model: pre-trained with ``objective`` on English + the ``transform``ed language."""

    transform: str
    objective: str
    label: str
    sup: float
    """POS accuracy (%) on the derived test set, fine-tuned on the derived language."""
    zs: float
    """the same, fine-tuned on English (zero-shot)."""
    alignment: float
    """alignment score in [0, 1] (:mod:`.alignment_score`)."""

    @property
    def delta(self) -> float:
        return self.sup - self.zs


def average_ranks(values: Sequence[float]) -> List[float]:
    """1-based ranks, ascending; tied values share the mean of the ranks they span."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    at = 0
    while at < len(order):
        end = at
        while end + 1 < len(order) and values[order[end + 1]] == values[order[at]]:
            end += 1
        for k in range(at, end + 1):
            ranks[order[k]] = (at + end) / 2 + 1
        at = end + 1
    return ranks


def pearson(x: Sequence[float], y: Sequence[float]) -> Optional[float]:
    """Pearson's r; None when either side has no variation (or fewer than 2 points)."""
    if len(x) != len(y):
        raise ValueError(f"{len(x)} and {len(y)} values")
    if len(x) < 2:
        return None
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def spearman(x: Sequence[float], y: Sequence[float]) -> Optional[float]:
    """Spearman's ρ: Pearson's r of the average ranks."""
    return pearson(average_ranks(x), average_ranks(y))


def correlation(cells: Sequence[Cell]) -> Optional[float]:
    """ρ between alignment and Δ over every model (the paper's sign: better alignment,
    lower Δ, so a negative ρ here is the paper's positive "alignment vs transfer")."""
    return spearman([c.alignment for c in cells], [c.delta for c in cells])


def markdown(cells: Sequence[Cell], rho: Optional[float], notes: Sequence[str] = ()) -> str:
    transforms = list(dict.fromkeys(c.transform for c in cells))
    objectives = list(dict.fromkeys(c.label for c in cells))
    by = {(c.transform, c.label): c for c in cells}
    head = "| objective | " + " | ".join(
        f"{TRANSFORM_LABELS.get(t, t)}: SUP / ZS / Δ | align" for t in transforms
    )
    lines = [head + " |", "|---|" + "---:|---:|" * len(transforms)]
    for label in objectives:
        parts = []
        for t in transforms:
            c = by.get((t, label))
            parts.append(
                f"{c.sup:.1f} / {c.zs:.1f} / {c.delta:.1f} | {c.alignment:.3f}" if c else "- | -"
            )
        lines.append(f"| {label} | " + " | ".join(parts) + " |")
    shown = "undefined (no variation)" if rho is None else f"{rho:+.2f}"
    lines += [
        "",
        f"Spearman ρ(alignment, Δ) over {len(cells)} models: {shown} "
        "(negative: better-aligned models transfer better, the paper's finding)",
    ]
    lines += [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def plot(cells: Sequence[Cell], rho: Optional[float], path: str) -> None:
    """Figure 2: alignment (x) vs Δ (y), one point per model, marker per transformation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.5))
    markers = ["o", "s", "^", "D"]
    for k, t in enumerate(dict.fromkeys(c.transform for c in cells)):
        mine = [c for c in cells if c.transform == t]
        ax.scatter(
            [c.alignment for c in mine],
            [c.delta for c in mine],
            marker=markers[k % len(markers)],
            label=TRANSFORM_LABELS.get(t, t),
        )
        for c in mine:
            ax.annotate(c.label, (c.alignment, c.delta), fontsize=7, xytext=(3, 3),
                        textcoords="offset points")  # fmt: skip
    ax.set_xlabel("alignment score")
    ax.set_ylabel("Δ = SUP − ZS (POS accuracy)")
    ax.set_title(f"alignment vs transfer (Spearman ρ = {'n/a' if rho is None else f'{rho:.2f}'})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write(out: str, cells: Sequence[Cell], about: Mapping[str, Any], notes: Sequence[str] = ()):
    """OUT/results.{md,json,png}; returns the markdown."""
    rho = correlation(cells)
    text = markdown(cells, rho, notes)
    with open(os.path.join(out, "results.md"), "w", encoding="utf-8") as f:
        f.write(text)
    table: Dict[str, Dict[str, Dict[str, float]]] = {}
    for c in cells:
        table.setdefault(c.transform, {})[c.objective] = {
            "sup": c.sup,
            "zs": c.zs,
            "delta": c.delta,
            "alignment": c.alignment,
        }
    payload = {
        "table": table,
        "models": [dict(asdict(c), delta=c.delta) for c in cells],
        "spearman_alignment_delta": rho,
        "notes": list(notes),
        **about,
    }
    with open(os.path.join(out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(payload, f, indent=2, ensure_ascii=False)
        f.write("\n")
    plot(cells, rho, os.path.join(out, "results.png"))
    return text
