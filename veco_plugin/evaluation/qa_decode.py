"""Start/end logits of QA windows -> the best answer text per question, as XTREME's
``run_squad.py`` decodes SQuAD v1.1 (its ``--n_best_size 20 --max_answer_length 30``).

For each window (:class:`..data.qa_windows.QaWindow`) with logits ``s``, ``e`` (T,):

* candidate starts: the ``n_best`` positions of largest ``s`` over the whole window
  (question and specials included, as there), candidate ends likewise from ``e``;
* a pair (i, j) is kept when both are context pieces of the window, ``j >= i``,
  ``j - i + 1 <= max_answer`` pieces, and the window gives piece i its most context
  (``QaWindow.max_context``);
* its score is ``s[i] + e[j]``.

The answer is the best pair over ALL windows of the question (the first on ties), cut
from the ORIGINAL context between the character spans of pieces i and j (so ``▁`` markers
and sentencepiece's normalisation never change it); ``""`` when no pair is kept.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..data.qa_windows import QaWindow

Logits = Any  # (T,) or longer (right-padded): a list of floats or a tensor row


def _values(logits: Logits, length: int) -> List[float]:
    values = logits.tolist() if hasattr(logits, "tolist") else list(logits)
    if len(values) < length:
        raise ValueError(f"{len(values)} logits for a window of {length} tokens")
    return [float(v) for v in values[:length]]


def _best_indexes(values: Sequence[float], n_best: int) -> List[int]:
    """Positions of the ``n_best`` largest values, largest first (earlier on ties)."""
    return sorted(range(len(values)), key=lambda i: -values[i])[:n_best]


def best_span(
    window: QaWindow,
    start_logits: Logits,
    end_logits: Logits,
    n_best: int = 20,
    max_answer: int = 30,
) -> Optional[Tuple[float, int, int]]:
    """The best kept pair of ``window``: (score, i, j) with i, j indices into
    ``window.spans``; None when no pair is kept."""
    length = len(window.tokens)
    starts, ends = _values(start_logits, length), _values(end_logits, length)
    first, end = window.context_offset, window.context_end
    best: Optional[Tuple[float, int, int]] = None
    for i in _best_indexes(starts, n_best):
        if not (first <= i < end and window.max_context[i - first]):
            continue
        for j in _best_indexes(ends, n_best):
            if not (i <= j < end and j - i + 1 <= max_answer):
                continue
            score = starts[i] + ends[j]
            if best is None or score > best[0]:
                best = (score, i - first, j - first)
    return best


def best_answers(
    contexts: Mapping[str, str],
    windows: Sequence[QaWindow],
    start_logits: Sequence[Logits],
    end_logits: Sequence[Logits],
    n_best: int = 20,
    max_answer: int = 30,
) -> Dict[str, str]:
    """``{id: answer text}`` (the official prediction format) for every id of
    ``contexts`` (id -> original context), from the logits of ``windows``.

    Args:
        windows: (N,) windows of these questions, in any order
        start_logits, end_logits: (N, T_n) one row per window (lists, or a padded
            (N, T) tensor)
    """
    if not len(windows) == len(start_logits) == len(end_logits):
        raise ValueError(
            f"{len(windows)} windows, {len(start_logits)} start and {len(end_logits)} end "
            "logit rows: one row each"
        )
    best: Dict[str, Tuple[float, str]] = {}
    for window, starts, ends in zip(windows, start_logits, end_logits):
        found = best_span(window, starts, ends, n_best, max_answer)
        if found is None:
            continue
        score, i, j = found
        if window.example_id not in best or score > best[window.example_id][0]:
            text = contexts[window.example_id][window.spans[i][0] : window.spans[j][1]]
            best[window.example_id] = (score, text.strip())
    return {qid: best[qid][1] if qid in best else "" for qid in contexts}


def write_predictions(predictions: Mapping[str, str], path: str) -> None:
    """``predictions`` as the official scripts read them: one JSON object id -> text."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(dict(predictions), f, ensure_ascii=False, indent=0)
        f.write("\n")
