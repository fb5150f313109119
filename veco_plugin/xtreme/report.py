"""``veco-xtreme``'s table: one row per checkpoint, one column per test language and their
average, as Markdown (OUT/results.md), JSON (OUT/results.json) and a bar plot
(OUT/results.png) of the headline metric.

The scorers' JSON differ by task; :func:`read_scores` makes them one shape,
``{metric: {lang: value, "avg": value}}``.
"""

import json
import os
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Sequence

from ..outputs import write_text
from .recipes import Recipe

if TYPE_CHECKING:
    from .summary import Summary

LABELS = {"accuracy": "accuracy", "f1": "F1", "em": "EM", "dev_f1": "sample (dev) F1"}
RULES = {"squad": "SQuAD v1.1's script in every language", "mlqa": "MLQA's script per language"}


def read_scores(recipe: Recipe, path: str, name: str, langs: Sequence[str]) -> Dict:
    """The row ``name`` of a scorer's JSON at ``path``, as ``{metric: {lang: value}}``."""
    with open(path, encoding="utf-8") as f:
        raw = json.load(f)[name]
    if recipe.test_format == "tsv":  # veco-sentence-eval: {split: accuracy}
        accuracy = {lang: raw[f"test_{lang}"] for lang in langs}
        accuracy["avg"] = sum(accuracy.values()) / len(langs)
        return {"accuracy": accuracy}
    return {metric: raw[metric] for metric in recipe.metrics}


def markdown(recipe: Recipe, rows: Mapping[str, Dict], langs: Sequence[str]) -> str:
    columns = [*langs, "avg"]
    parts: List[str] = []
    for metric in recipe.metrics:
        lines = [f"| {recipe.task} {LABELS[metric]} | " + " | ".join(columns) + " |"]
        lines.append("|---|" + "---:|" * len(columns))
        for name, scores in rows.items():
            cells = " | ".join(f"{scores[metric][c]:.1f}" for c in columns)
            lines.append(f"| {name} | {cells} |")
        parts.append("\n".join(lines))
    if recipe.normalisation:  # which rules scored the answers
        parts.append(
            f"Answers scored with {RULES[recipe.normalisation]}, as XTREME scores {recipe.task}."
        )
    return "\n\n".join(parts) + "\n"


def plot(recipe: Recipe, rows: Mapping[str, Dict], langs: Sequence[str], path: str) -> None:
    """Grouped bars: the headline metric per language (and the average), a bar per row."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metric = recipe.metrics[0]
    columns = [*langs, "avg"]
    width = 0.8 / max(len(rows), 1)
    fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(columns) + 2), 3.5))
    for i, (name, scores) in enumerate(rows.items()):
        xs = [c + (i - (len(rows) - 1) / 2) * width for c in range(len(columns))]
        ax.bar(xs, [scores[metric][c] for c in columns], width, label=name)
    ax.set_xticks(range(len(columns)), columns)
    ax.set_ylabel(LABELS[metric])
    ax.set_title(f"{recipe.task}: fine-tuned on English, zero-shot on the others")
    ax.grid(axis="y", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path + ".part.png", dpi=100)
    plt.close(fig)
    os.replace(path + ".part.png", path)


def plot_summary(rows: Mapping[str, "Summary"], path: str) -> None:
    """Grouped bars: each task's headline and the overall score, a bar per checkpoint."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .summary import OVERALL, TASKS

    columns = [*TASKS, OVERALL]
    width = 0.8 / max(len(rows), 1)
    fig, ax = plt.subplots(figsize=(1.2 * len(columns) + 2, 3.5))
    for i, (name, s) in enumerate(rows.items()):
        values = [s.tasks[t].headline if t in s.tasks else 0.0 for t in TASKS]
        xs = [c + (i - (len(rows) - 1) / 2) * width for c in range(len(columns))]
        ax.bar(xs, values + [s.overall or 0.0], width, label=name)
    ax.set_xticks(range(len(columns)), columns)
    ax.set_ylabel("headline metric")
    ax.set_title("XTREME: fine-tuned on English, zero-shot on the others")
    ax.grid(axis="y", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path + ".part.png", dpi=100)
    plt.close(fig)
    os.replace(path + ".part.png", path)


def write(
    out: str, recipe: Recipe, rows: Mapping[str, Dict], langs: Sequence[str], about: Dict
) -> str:
    """OUT/results.{md,json,png}; returns the Markdown."""
    table = markdown(recipe, rows, langs)
    summary: Dict[str, Any] = {"task": recipe.task, "headline": recipe.metrics[0]}
    summary.update(languages=list(langs), rows=rows)
    write_text(os.path.join(out, "results.json"), json.dumps({**summary, **about}, indent=2))
    write_text(os.path.join(out, "results.md"), table)
    plot(recipe, rows, langs, os.path.join(out, "results.png"))
    return table
