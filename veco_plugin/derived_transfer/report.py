"""``veco-derived-transfer``'s results: the paper's Table 3 for POS (per transformation:
SUP, ZS and Δ = SUP − ZS per objective in seqeval F1, the paper's POS metric, accuracy's Δ
beside; lower Δ is better transfer), Table 8's alignment of each model (over the
vocabulary, inside and outside the dictionary, after zero-shot fine-tuning and, with
language embeddings, with the language vectors added), the Spearman correlation between
alignment and F1 Δ and Figure 3's scatter (App. E: ρ_s = 0.734 for POS in the paper), as
OUT/results.{md,json,png}.

Spearman's ρ is Pearson's correlation of the ranks, ties given their average rank
(:func:`average_ranks`); with no variation in either list it is undefined (None).
"""

import json
import math
import os
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence

TRANSFORM_LABELS = {
    "trans": "T_trans",
    "inv": "T_inv",
    "trans_inv": "T_trans∘T_inv",
    "trans_syn": "T_trans∘T_syn",
}


@dataclass(frozen=True)
class Cell:
    """One model: pre-trained with ``objective`` on English + the ``transform``ed language."""

    transform: str
    objective: str
    label: str
    sup: float
    """POS seqeval F1 (%) on the derived dev file, fine-tuned on the derived language."""
    zs: float
    """the same, fine-tuned on English (zero-shot)."""
    alignment: float
    """alignment score in [0, 1] over the vocabulary (:mod:`.alignment_score`)."""
    sup_accuracy: float = math.nan
    """POS accuracy (%), as ``sup``."""
    zs_accuracy: float = math.nan
    alignment_dictionary: float = math.nan
    """over the English tokens of the bilingual dictionary."""
    alignment_outside: float = math.nan
    """over the English tokens outside it."""
    alignment_tuned: float = math.nan
    """over the vocabulary, of the model fine-tuned on English (ZS)."""
    alignment_languages: Optional[float] = None
    """with the language vectors added, on the random 40 % (models with language
    embeddings; else None)."""
    alignment_sampled: Optional[float] = None
    """the token rows alone on that same 40 %."""

    @property
    def delta(self) -> float:
        """Δ in F1."""
        return self.sup - self.zs

    @property
    def delta_accuracy(self) -> float:
        return self.sup_accuracy - self.zs_accuracy


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


def _percent(value: Optional[float]) -> str:
    return "-" if value is None or math.isnan(value) else f"{100 * value:.1f}"


def markdown(cells: Sequence[Cell], rho: Optional[float], notes: Sequence[str] = ()) -> str:
    """The Δ table (per transformation: F1 SUP / ZS / Δ, accuracy's Δ), the alignment
    table (%, one row per model) and ρ."""
    transforms = list(dict.fromkeys(c.transform for c in cells))
    objectives = list(dict.fromkeys(c.label for c in cells))
    by = {(c.transform, c.label): c for c in cells}
    head = "| objective | " + " | ".join(
        f"{TRANSFORM_LABELS.get(t, t)}: SUP / ZS / Δ (F1) | Δ acc." for t in transforms
    )
    lines = [head + " |", "|---|" + "---:|---:|" * len(transforms)]
    for label in objectives:
        parts = []
        for t in transforms:
            c = by.get((t, label))
            parts.append(
                f"{c.sup:.1f} / {c.zs:.1f} / {c.delta:.1f} | {c.delta_accuracy:.1f}"
                if c
                else "- | -"
            )
        lines.append(f"| {label} | " + " | ".join(parts) + " |")
    lines += [
        "",
        "| transformation | objective | alignment (%) | in the dictionary | outside | "
        "after ZS fine-tuning | + language vectors (40 %) | token rows (same 40 %) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for c in cells:
        values = (c.alignment, c.alignment_dictionary, c.alignment_outside, c.alignment_tuned,
                  c.alignment_languages, c.alignment_sampled)  # fmt: skip
        lines.append(
            f"| {TRANSFORM_LABELS.get(c.transform, c.transform)} | {c.label} | "
            + " | ".join(_percent(v) for v in values)
            + " |"
        )
    shown = "undefined (no variation)" if rho is None else f"{rho:+.2f}"
    lines += [
        "",
        f"Spearman ρ(alignment, Δ F1) over {len(cells)} models: {shown} "
        "(negative: better-aligned models transfer better, the paper's finding; its Figure 3 "
        "/ App. E: ρ_s = 0.734 for POS, signed as alignment vs transfer)",
    ]
    lines += [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def plot(cells: Sequence[Cell], rho: Optional[float], path: str) -> None:
    """Figure 3 (App. E for POS): alignment (x) vs Δ in F1 (y), one point per model,
    marker per transformation."""
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
    ax.set_ylabel("Δ = SUP − ZS (POS F1)")
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
    table: Dict[str, Dict[str, Dict[str, Optional[float]]]] = {}
    for c in cells:
        table.setdefault(c.transform, {})[c.objective] = {
            "sup": c.sup,
            "zs": c.zs,
            "delta": c.delta,
            "sup_accuracy": c.sup_accuracy,
            "zs_accuracy": c.zs_accuracy,
            "delta_accuracy": c.delta_accuracy,
            "alignment": c.alignment,
            "alignment_dictionary": c.alignment_dictionary,
            "alignment_outside": c.alignment_outside,
            "alignment_tuned": c.alignment_tuned,
            "alignment_languages": c.alignment_languages,
            "alignment_sampled": c.alignment_sampled,
        }
    payload = {
        "metric": "f1",
        "table": table,
        "models": [dict(asdict(c), delta=c.delta, delta_accuracy=c.delta_accuracy) for c in cells],
        "spearman_alignment_delta": rho,
        "notes": list(notes),
        **about,
    }
    with open(os.path.join(out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(payload, f, indent=2, ensure_ascii=False)
        f.write("\n")
    plot(cells, rho, os.path.join(out, "results.png"))
    return text
