"""XTREME's summary score, as google-research/xtreme's ``evaluate.py`` computes it.

Per task, every metric is averaged over the task's languages (:data:`TASK_LANGS`, XTREME's
``XTREME_TASK2LANGS``, English included where XTREME lists it) and the task's headline
(``avg_metric``) is chosen as ``evaluate.py`` does:

* QA (xquad, mlqa, tydiqa): ``(avg EM + avg F1) / 2`` (the average of the two averages);
* otherwise F1 where the task has one (udpos, panx, bucc2018), else accuracy (pawsx,
  xnli, tatoeba).

A category score (:data:`CATEGORIES`) is the mean of its tasks' headlines, given only when
every task of the category has one; the overall score is the mean of the nine tasks'
headlines (not of the four categories), given only when all nine have one. ``evaluate.py``
stops on a missing language file; here a task that lacks one of XTREME's languages keeps
its average over the languages it has, is marked incomplete (:attr:`TaskSummary.missing`),
and counts in no category and not in the overall score: those would not be XTREME's.
Languages outside XTREME's list are kept per language and left out of the averages, as
``evaluate.py`` never reads them.

:func:`score_folder` scores XTREME-format predictions (``PRED/<task>/test-<lang>.<ext>``)
against labels of the same layout (``evaluate.py``'s, and its ``mock_test_data``) with the
plugin's own scorers; :func:`markdown` and :func:`as_json` render one row per checkpoint.
"""

import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..corpora.squad import gold_answers, read_squad
from ..errors import VecoUserError
from ..evaluation.bucc import f1_scores
from ..evaluation.qa_scores import score as qa_score
from ..evaluation.tagging_scores import chunk_f1

# category -> tasks, in XTREME's table order (evaluate.py's XTREME_GROUP2TASK)
CATEGORIES: Dict[str, Tuple[str, ...]] = {
    "classification": ("pawsx", "xnli"),
    "tagging": ("udpos", "panx"),
    "qa": ("xquad", "mlqa", "tydiqa"),
    "retrieval": ("bucc2018", "tatoeba"),
}
TASKS: Tuple[str, ...] = tuple(t for tasks in CATEGORIES.values() for t in tasks)
QA_TASKS = CATEGORIES["qa"]

# task -> XTREME's test languages, in evaluate.py's order (XTREME_TASK2LANGS)
TASK_LANGS: Dict[str, Tuple[str, ...]] = {
    "pawsx": tuple("de en es fr ja ko zh".split()),
    "xnli": tuple("ar bg de el en es fr hi ru sw th tr ur vi zh".split()),
    "panx": tuple(
        "ar he vi id jv ms tl eu ml ta te af nl en de el bn hi mr ur fa fr it pt es bg ru ja "
        "ka ko th sw yo my zh kk tr et fi hu".split()
    ),
    "udpos": tuple(
        "af ar bg de el en es et eu fa fi fr he hi hu id it ja kk ko mr nl pt ru ta te th tl "
        "tr ur vi yo zh".split()
    ),
    "bucc2018": tuple("de fr ru zh".split()),
    "tatoeba": tuple(
        "ar he vi id jv tl eu ml ta te af nl de el bn hi mr ur fa fr it pt es bg ru ja ka ko "
        "th sw zh kk tr et fi hu".split()
    ),
    "xquad": tuple("en es de el ru tr ar vi th zh hi".split()),
    "mlqa": tuple("en es de ar hi vi zh".split()),
    "tydiqa": tuple("en ar bn fi id ko ru sw te".split()),
}

EXACT_MATCH, F1, ACCURACY = "exact_match", "f1", "accuracy"
# the plugin's scorers' names for XTREME's metrics (veco-qa-eval writes "em")
ALIASES = {"em": EXACT_MATCH}

# task -> metric -> lang -> value (percent)
TaskScores = Mapping[str, Mapping[str, float]]
Results = Mapping[str, TaskScores]


@dataclass(frozen=True)
class TaskSummary:
    """One task: each metric's average over XTREME's languages present, the headline."""

    averages: Dict[str, float]
    headline: float
    languages: Tuple[str, ...]
    missing: Tuple[str, ...]  # XTREME's languages without a score

    @property
    def complete(self) -> bool:
        return not self.missing


@dataclass(frozen=True)
class Summary:
    """What ``evaluate.py`` reports for one model: per task, per category, overall."""

    tasks: Dict[str, TaskSummary] = field(default_factory=dict)
    categories: Dict[str, float] = field(default_factory=dict)
    overall: Optional[float] = None


def headline_metric(task: str, averages: Mapping[str, float]) -> float:
    """``evaluate.py``'s ``avg_metric`` of ``task`` from its metric ``averages``."""
    if task in QA_TASKS:
        return (averages[EXACT_MATCH] + averages[F1]) / 2
    for metric in (F1, ACCURACY):
        if metric in averages:
            return averages[metric]
    raise VecoUserError(
        f"{task}: no f1 or accuracy among its metrics ({', '.join(averages)}): give "
        "XTREME's headline metric"
    )


def summarize_task(task: str, scores: TaskScores) -> TaskSummary:
    """Average each metric of ``scores`` ({metric: {lang: value}}) over XTREME's languages
    of ``task`` that it has, in XTREME's order."""
    if task not in TASK_LANGS:
        raise VecoUserError(f"{task}: not an XTREME task (one of {', '.join(TASKS)})")
    metrics = {ALIASES.get(m, m): by_lang for m, by_lang in scores.items()}
    if task in QA_TASKS and not {EXACT_MATCH, F1} <= set(metrics):
        raise VecoUserError(f"{task}: QA's headline needs exact_match (em) and f1 scores")
    present = tuple(
        lang for lang in TASK_LANGS[task] if all(lang in by_lang for by_lang in metrics.values())
    )
    if not metrics or not present:
        given = sorted({lang for by_lang in metrics.values() for lang in by_lang})
        raise VecoUserError(
            f"{task}: no score in any of XTREME's languages ({', '.join(given) or 'none'} "
            f"given; XTREME's: {', '.join(TASK_LANGS[task])})"
        )
    averages = {
        metric: sum(by_lang[lang] for lang in present) / len(present)
        for metric, by_lang in metrics.items()
    }
    missing = tuple(lang for lang in TASK_LANGS[task] if lang not in present)
    return TaskSummary(averages, headline_metric(task, averages), present, missing)


def summarize(results: Results) -> Summary:
    """XTREME's summary of ``results`` ({task: {metric: {lang: value}}}, percent)."""
    unknown = sorted(set(results) - set(TASKS))
    if unknown:
        raise VecoUserError(
            f"{', '.join(unknown)}: not XTREME tasks (XTREME's: {', '.join(TASKS)})"
        )
    tasks = {task: summarize_task(task, results[task]) for task in TASKS if task in results}
    complete = {task: s.headline for task, s in tasks.items() if s.complete}
    categories = {
        name: sum(complete[t] for t in members) / len(members)
        for name, members in CATEGORIES.items()
        if all(t in complete for t in members)
    }
    # evaluate.py sums over a set of task names (its order, so the last bit, varies by run)
    overall = sum(complete[t] for t in TASKS) / len(TASKS) if len(complete) == len(TASKS) else None
    return Summary(tasks, categories, overall)


# --- XTREME-format predictions and labels ------------------------------------------------


def _lines(path: str) -> List[str]:
    """The lines of ``path``, stripped (``evaluate.py``'s ``read_label``)."""
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f]


def _tag_sentences(path: str) -> List[List[str]]:
    """Tags one per line, sentences apart by a blank line (``evaluate.py``'s ``read_tag``:
    every blank line ends a sentence, an empty one included)."""
    sentences: List[List[str]] = [[]]
    for line in _lines(path):
        if line:
            sentences[-1].append(line)
        else:
            sentences.append([])
    return sentences if sentences[-1] else sentences[:-1]


def _same_length(task: str, pred: str, gold: str, a: Sequence, b: Sequence) -> None:
    if len(a) != len(b):
        raise VecoUserError(
            f"{pred}: {len(a)} {task} predictions for the {len(b)} of {gold}: give one per "
            "example, in the labels' order"
        )


def _accuracy(task: str, pred: str, gold: str) -> Dict[str, float]:
    predicted, labels = _lines(pred), _lines(gold)
    _same_length(task, pred, gold, predicted, labels)
    if not predicted:
        raise VecoUserError(f"{pred}: no {task} predictions")
    return {ACCURACY: 100 * sum(p == g for p, g in zip(predicted, labels)) / len(predicted)}


def _tagging(task: str, pred: str, gold: str) -> Dict[str, float]:
    predicted, labels = _tag_sentences(pred), _tag_sentences(gold)
    _same_length(task, pred, gold, predicted, labels)
    return {F1: 100 * chunk_f1(labels, predicted)}


def _bucc(task: str, pred: str, gold: str) -> Dict[str, float]:
    return {F1: f1_scores(_lines(gold), _lines(pred)).f1}


def _qa(task: str, pred: str, gold: str, lang: str) -> Dict[str, float]:
    with open(pred, encoding="utf-8") as f:
        predictions = json.load(f)
    if not isinstance(predictions, dict):
        raise VecoUserError(f"{pred}: not {{question id: answer text}} JSON")
    # XQuAD and TyDiQA-GoldP: SQuAD v1.1's rules; MLQA: MLQA's, in every language, en too
    result = qa_score(gold_answers(read_squad(gold)), predictions, lang if task == "mlqa" else None)
    return {EXACT_MATCH: result.exact_match, F1: result.f1}


Scorer = Callable[[str, str, str], Dict[str, float]]
SCORERS: Dict[str, Scorer] = {
    "pawsx": _accuracy,
    "xnli": _accuracy,
    "tatoeba": _accuracy,
    "udpos": _tagging,
    "panx": _tagging,
    "bucc2018": _bucc,
}


def suffix(task: str) -> str:
    """The file extension of ``task``'s predictions and labels (``evaluate.py``)."""
    return "json" if task in QA_TASKS else "tsv"


def score_task(task: str, pred_dir: str, label_dir: str, lang: str) -> Dict[str, float]:
    """``{metric: value}`` of ``pred_dir/test-<lang>`` against ``label_dir/test-<lang>``."""
    name = f"test-{lang}.{suffix(task)}"
    pred, gold = os.path.join(pred_dir, name), os.path.join(label_dir, name)
    for path in (pred, gold):
        if not os.path.isfile(path):
            raise VecoUserError(
                f"{path}: no such file: XTREME scores {task} on all of "
                f"{', '.join(TASK_LANGS[task])}"
            )
    if task in QA_TASKS:
        return _qa(task, pred, gold, lang)
    return SCORERS[task](task, pred, gold)


def score_folder(predictions: str, labels: str) -> Dict[str, Dict[str, Dict[str, float]]]:
    """Every XTREME task that has a folder under both ``predictions`` and ``labels``, each
    scored on all of XTREME's languages: {task: {metric: {lang: value}}}."""
    for flag, path in (("predictions", predictions), ("labels", labels)):
        if not os.path.isdir(path):
            raise VecoUserError(f"{flag} folder {path}: not a directory (<task>/test-<lang>.*)")
    results: Dict[str, Dict[str, Dict[str, float]]] = {}
    for task in TASKS:
        pred_dir, label_dir = os.path.join(predictions, task), os.path.join(labels, task)
        if not (os.path.isdir(pred_dir) and os.path.isdir(label_dir)):
            continue
        by_metric: Dict[str, Dict[str, float]] = {}
        for lang in TASK_LANGS[task]:
            for metric, value in score_task(task, pred_dir, label_dir, lang).items():
                by_metric.setdefault(metric, {})[lang] = value
        results[task] = by_metric
    return results


# --- rendering ----------------------------------------------------------------------------

OVERALL = "xtreme"


def as_json(rows: Mapping[str, Summary]) -> Dict[str, Any]:
    """``{checkpoint: {"tasks": {task: {averages, headline, languages, missing}},
    "categories": {...}, "overall": value or None}}``."""
    out: Dict[str, Any] = {}
    for name, summary in rows.items():
        tasks = {
            task: {
                "averages": s.averages,
                "headline": s.headline,
                "languages": list(s.languages),
                "missing": list(s.missing),
            }
            for task, s in summary.tasks.items()
        }
        out[name] = {"tasks": tasks, "categories": summary.categories, "overall": summary.overall}
    return out


def _cell(value: Optional[float], incomplete: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" + ("*" if incomplete else "")


def markdown(rows: Mapping[str, Summary]) -> str:
    """One row per checkpoint: a column per task (its headline; ``*``: not all of XTREME's
    languages), the four category averages and the overall score (``-``: not given)."""
    columns = [*TASKS, *CATEGORIES, OVERALL]
    lines = ["| model | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    for name, s in rows.items():
        cells = [
            _cell(s.tasks[t].headline, not s.tasks[t].complete) if t in s.tasks else "-"
            for t in TASKS
        ]
        cells += [_cell(s.categories.get(c)) for c in CATEGORIES] + [_cell(s.overall)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    notes = [
        "Headline per task as XTREME's evaluate.py: QA (EM + F1) / 2, tagging and bucc2018 F1, "
        "the others accuracy; categories and the overall score (the mean of the nine tasks) "
        "only when all their tasks cover all of XTREME's languages."
    ]
    if any(not s.complete for summary in rows.values() for s in summary.tasks.values()):
        notes.append("*: averaged over fewer languages than XTREME's (not comparable).")
    return "\n".join(lines) + "\n\n" + "\n".join(notes) + "\n"
