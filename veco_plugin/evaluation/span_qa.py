"""A ``veco_span_qa`` checkpoint answers the questions of a SQuAD-format file
(``veco-qa-eval``).

The questions are cut into windows exactly as ``veco-prepare-span-qa`` cut them (the
DATA's ``spm.model`` and ``qa_windows.json``, :func:`..corpora.span_qa_data.encode_windows`),
the model gives start and end logits at every position, batch by batch, and
:func:`.qa_decode.best_answers` picks each question's answer over all its windows (n-best
20, at most 30 pieces), cut from the original context.
"""

import os
from typing import Any, Dict, List, Sequence, Tuple

import torch

from ..corpora.span_qa_data import encode_windows, read_settings
from ..corpora.squad import QaExample
from ..corpora.subwords import load_sentencepiece
from ..data.qa_windows import QaWindow
from .qa_decode import best_answers
from .tagging import load_fine_tuned

TASK = "veco_span_qa"
SPAN_QA_FIX = (
    f"give a checkpoint fine-tuned with fairseq-train --task {TASK} (its checkpoint_best.pt)"
)


def load_span_qa(path: str, data: str, named: str) -> Tuple[Any, Any, Any]:
    """``(model, cfg, task)`` of the ``veco_span_qa`` checkpoint ``path`` on DATA, in eval
    mode; anything else is one line starting with ``named``."""
    length = read_settings(data).max_length
    return load_fine_tuned(path, data, named, TASK, "an extractive QA model", SPAN_QA_FIX, length)


def window_logits(
    model, head: str, windows: Sequence[QaWindow], pad: int, batch_size: int = 32
) -> Tuple[List[torch.Tensor], List[torch.Tensor]]:
    """Start and end logits of every window: two lists of (T_n,) rows, in window order."""
    device = next(model.parameters()).device
    starts: List[torch.Tensor] = []
    ends: List[torch.Tensor] = []
    for first in range(0, len(windows), batch_size):
        batch = windows[first : first + batch_size]
        src = torch.full((len(batch), max(len(w.tokens) for w in batch)), pad, dtype=torch.long)
        for row, window in enumerate(batch):
            src[row, : len(window.tokens)] = torch.tensor(window.tokens)
        with torch.no_grad():
            logits, _ = model(
                src.to(device), features_only=True, classification_head_name=head
            )  # (B, T, 2)
        logits = logits.float().cpu()
        for row, window in enumerate(batch):
            starts.append(logits[row, : len(window.tokens), 0])
            ends.append(logits[row, : len(window.tokens), 1])
    return starts, ends


def answer_questions(
    model, task, head: str, examples: Sequence[QaExample], batch_size: int = 32
) -> Dict[str, str]:
    """``{id: predicted answer text}`` for every example (gold answers are not read)."""
    sp = load_sentencepiece(os.path.join(task.cfg.data, "spm.model"), "--data")
    tokens = task.source_dictionary
    windows = encode_windows(sp, tokens, examples, read_settings(task.cfg.data))
    starts, ends = window_logits(model, head, windows, tokens.pad(), batch_size)
    return best_answers({e.id: e.context for e in examples}, windows, starts, ends)
