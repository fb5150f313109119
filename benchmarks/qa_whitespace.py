#!/usr/bin/env python
"""What XTREME's whitespace mapping of QA answers can cost, at most: each question's first
gold answer widened to the whitespace-separated words it touches, scored against the gold.

XTREME's released QA pipeline splits a context on whitespace (``processors/squad.py:82-86``,
``:616-636``) and writes an answer as the words its first and last pieces fall in
(transformers' ``compute_predictions_logits``: ``" ".join(doc_tokens[start:end + 1])``,
then ``get_final_text`` trims it back to the predicted pieces where it can align them). A
language written without spaces (Chinese, Thai) has a clause or a sentence per "word":
where that alignment fails (xtreme#38, transformers#3510) the answer is the whole clause.
``veco-qa-eval`` cuts the answer's exact characters instead. The widened gold answers are an
upper bound of that difference: a model that finds every gold span exactly loses this much
under the mapping when no alignment succeeds.

    python benchmarks/qa_whitespace.py XQUAD/xquad.zh.json [XQUAD/xquad.en.json ...]

Columns: EM and F1 of the widened answers under SQuAD v1.1's rules (XTREME scores XQuAD
with them) and under MLQA's for the file's language (``xquad.<lang>.json``; nan where MLQA
has no rules for it).
"""

import os
import re
import sys
from typing import Dict, List, Sequence

from veco_plugin.corpora.squad import Answer, gold_answers, read_squad
from veco_plugin.evaluation.qa_scores import score

WHITESPACE = " \t\r\n\u202f"  # processors/squad.py:82-86
MLQA_LANGS = ("en", "es", "de", "vi", "ar", "hi", "zh")  # MLQA's rules exist for these


def whitespace_answer(context: str, answer: Answer) -> str:
    """The whitespace-separated words of ``context`` that ``answer``'s characters touch,
    joined by one space (the text XTREME's mapping gives before ``get_final_text``)."""
    words = [(m.start(), m.end()) for m in re.finditer(f"[^{WHITESPACE}]+", context)]
    last = max(answer.end - 1, answer.start)
    touched = [context[s:e] for s, e in words if s <= last and e > answer.start]
    return " ".join(touched)


def widened(path: str) -> Dict[str, str]:
    """``{id: first gold answer widened to its whitespace words}`` of a SQuAD file."""
    return {e.id: whitespace_answer(e.context, e.answers[0]) for e in read_squad(path)}


def rows(paths: Sequence[str]) -> List[List[object]]:
    table: List[List[object]] = []
    for path in paths:
        lang = os.path.basename(path).split(".")[-2]
        gold, predicted = gold_answers(read_squad(path)), widened(path)
        squad = score(gold, predicted)
        mlqa = score(gold, predicted, lang) if lang in MLQA_LANGS else None
        table.append(
            [lang, len(gold), squad.exact_match, squad.f1]
            + ([mlqa.exact_match, mlqa.f1] if mlqa else [float("nan")] * 2)
        )
    return table


def main(argv: Sequence[str]) -> None:
    print("| file | questions | SQuAD EM | SQuAD F1 | MLQA EM | MLQA F1 |")
    print("|---|---:|---:|---:|---:|---:|")
    for lang, n, *figures in rows(argv):
        print(f"| {lang} | {n} | " + " | ".join(f"{v:.1f}" for v in figures) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
