#!/usr/bin/env python
"""MLQA's rules vs SQuAD v1.1's on the same predictions: what scoring MLQA with SQuAD's
script (as ``veco-xtreme`` did for any SQuAD-format file) changes, per language.

Files (``tests/fixtures``):

* ``xtreme_mock``: XTREME's mock MLQA labels and predictions (1-2 questions a language;
  ar, hi, vi, zh predicted exactly, en, es, de cut short);
* ``xquad``: XQuAD's published excerpt (40 questions a language) with prediction files
  made by a fixed rule (``tests/fixtures/xquad/README.md``; not model output).

    python benchmarks/qa_rules.py

Columns: EM and F1 under MLQA's rules for the language (XTREME's ``evaluate.py`` for
MLQA), under SQuAD v1.1's, and SQuAD minus MLQA. No model output on real MLQA is to be had
here: the differences show the rules, not a model's numbers.
"""

import json
import os
from typing import Dict, List, Tuple

from veco_plugin.corpora.squad import gold_answers, read_squad
from veco_plugin.evaluation.qa_scores import score

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
MLQA_LANGS = ("en", "es", "de", "ar", "hi", "vi", "zh")
XQUAD_LANGS = ("en", "de", "ar", "zh")


def files(source: str, lang: str) -> Tuple[str, str]:
    """(labels, predictions) of ``lang`` in ``source``."""
    if source == "xtreme_mock":
        mock, name = os.path.join(FIXTURES, "xtreme_mock"), f"test-{lang}.json"
        return os.path.join(mock, "labels", "mlqa", name), os.path.join(
            mock, "predictions", "mlqa", name
        )
    xquad = os.path.join(FIXTURES, "xquad")
    return os.path.join(xquad, f"xquad.{lang}.json"), os.path.join(
        xquad, f"predictions.{lang}.json"
    )


def row(source: str, lang: str) -> List[float]:
    labels, predictions = files(source, lang)
    gold = gold_answers(read_squad(labels))
    with open(predictions, encoding="utf-8") as f:
        predicted: Dict[str, str] = json.load(f)
    mlqa, squad = score(gold, predicted, lang), score(gold, predicted, None)
    return [
        len(gold),
        mlqa.exact_match,
        mlqa.f1,
        squad.exact_match,
        squad.f1,
        squad.exact_match - mlqa.exact_match,
        squad.f1 - mlqa.f1,
    ]


def main() -> None:
    print("| files | lang | questions | MLQA EM | MLQA F1 | SQuAD EM | SQuAD F1 | ΔEM | ΔF1 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for source, langs in (("xtreme_mock", MLQA_LANGS), ("xquad", XQUAD_LANGS)):
        for lang in langs:
            n, *figures = row(source, lang)
            cells = " | ".join(f"{v:{'+' if i >= 4 else ''}.1f}" for i, v in enumerate(figures))
            print(f"| {source} | {lang} | {n:.0f} | {cells} |")


if __name__ == "__main__":
    main()
