"""Extractive QA scores: exact match (EM) and token F1, as XTREME reports them.

**SQuAD v1.1** (XQuAD, TyDiQA-GoldP): an answer is normalised by lower-casing, removing
ASCII punctuation (Python's ``string.punctuation``), removing the words ``a``, ``an``,
``the``, and splitting on whitespace. EM = the normalised prediction equals a normalised
gold answer; F1 = ``2 P R / (P + R)`` over the multiset of common tokens (0 when none is
common); both take the best over the gold answers, are averaged over ALL questions (one
without a prediction scores 0) and given in percent.

**MLQA** (its ``mlqa_evaluation_v1.py``): the same, with

* punctuation = every character of Unicode category ``P*`` plus ``string.punctuation``;
* articles per answer language, removed as whole words (``\\b``, Unicode-aware):
  en ``a an the``; es ``un una unos unas el la los las``; de ``ein eine einen einem eines
  einer der die das den dem des``; vi ``của là cái chiếc những`` (the script's list);
  ar: every ``ال``, also inside a word (the script's pattern; its other alternative
  ``\\sال^`` never matches); hi, zh: none;
* tokens: whitespace-separated, except zh, which uses mixed segmentation: every
  character of U+4E00..U+9FA5 (and every punctuation character) is a token, runs of other
  characters are split on whitespace.

XTREME (``evaluate.py``, ``scripts/eval_qa.sh``) scores XQuAD and TyDiQA-GoldP with SQuAD
v1.1's script in every language, MLQA with MLQA's for each test language, ``en``
included: English under MLQA's rules also drops Unicode punctuation (``“ ” – «``).
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Sequence

from ..errors import VecoUserError

SQUAD_ARTICLES = re.compile(r"\b(a|an|the)\b")
MLQA_ARTICLES: Dict[str, Optional[str]] = {
    "en": r"\b(a|an|the)\b",
    "es": r"\b(un|una|unos|unas|el|la|los|las)\b",
    "de": r"\b(ein|eine|einen|einem|eines|einer|der|die|das|den|dem|des)\b",
    "vi": r"\b(của|là|cái|chiếc|những)\b",
    "ar": r"ال",
    "hi": None,
    "zh": None,
}
MIXED_SEGMENTATION = ("zh",)
CJK_FIRST, CJK_LAST = "\u4e00", "\u9fa5"  # the MLQA script's range


@dataclass(frozen=True)
class QaScores:
    """EM and F1 in percent over ``total`` questions (``unanswered`` had no prediction)."""

    exact_match: float
    f1: float
    total: int
    unanswered: int


def _mlqa_punctuation(ch: str) -> bool:
    return unicodedata.category(ch).startswith("P") or ch in string.punctuation


def squad_tokens(text: str) -> List[str]:
    """SQuAD v1.1's normalised tokens of ``text``."""
    text = "".join(ch for ch in text.lower() if ch not in string.punctuation)
    return SQUAD_ARTICLES.sub(" ", text).split()


def mixed_segmentation(text: str) -> List[str]:
    """MLQA's zh tokens: each CJK (U+4E00..U+9FA5) or punctuation character alone,
    whitespace-split runs of the other characters."""
    tokens: List[str] = []
    run: List[str] = []
    for ch in text:
        if CJK_FIRST <= ch <= CJK_LAST or _mlqa_punctuation(ch):
            tokens.extend("".join(run).split())
            run = []
            tokens.append(ch)
        else:
            run.append(ch)
    tokens.extend("".join(run).split())
    return tokens


def mlqa_tokens(text: str, lang: str) -> List[str]:
    """MLQA's normalised tokens of ``text`` in answer language ``lang``."""
    if lang not in MLQA_ARTICLES:
        raise VecoUserError(
            f"MLQA scores answers in {', '.join(MLQA_ARTICLES)}, not {lang!r}: give one of "
            "those languages (or score with SQuAD v1.1's rules)"
        )
    text = "".join(ch for ch in text.lower() if not _mlqa_punctuation(ch))
    articles = MLQA_ARTICLES[lang]
    if articles is not None:
        text = re.sub(articles, " ", text)
    tokens = mixed_segmentation(text) if lang in MIXED_SEGMENTATION else text.split()
    return [t for t in tokens if t.strip()]


def _tokenizer(lang: Optional[str]) -> Callable[[str], List[str]]:
    if lang is None:
        return squad_tokens
    mlqa_tokens("", lang)  # an unknown language fails here, once
    return lambda text: mlqa_tokens(text, lang)


def exact_match(prediction: str, gold: str, lang: Optional[str] = None) -> bool:
    """Whether the normalised texts are equal (SQuAD v1.1; MLQA's rules for ``lang``)."""
    tokens = _tokenizer(lang)
    return tokens(prediction) == tokens(gold)


def token_f1(prediction: str, gold: str, lang: Optional[str] = None) -> float:
    """Token F1 in [0, 1] of the normalised texts; 0 when they share no token."""
    tokens = _tokenizer(lang)
    return _f1(tokens(prediction), tokens(gold))


def _f1(predicted: List[str], expected: List[str]) -> float:
    same = sum((Counter(predicted) & Counter(expected)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(expected)
    return 2 * precision * recall / (precision + recall)


def score(
    gold: Mapping[str, Sequence[str]], predictions: Mapping[str, str], lang: Optional[str] = None
) -> QaScores:
    """EM and F1 (percent) of ``predictions`` (id -> text) against ``gold`` (id -> gold
    answer texts): SQuAD v1.1 when ``lang`` is None, else MLQA's rules for ``lang``.
    Predictions for ids not in ``gold`` are ignored."""
    if not gold:
        raise VecoUserError("no questions to score: the gold file holds none")
    tokens = _tokenizer(lang)
    em = f1 = 0.0
    unanswered = 0
    for qid, answers in gold.items():
        if qid not in predictions:
            unanswered += 1
            continue
        predicted = tokens(predictions[qid])
        expected = [tokens(answer) for answer in answers]
        em += max((float(predicted == e) for e in expected), default=0.0)
        f1 += max((_f1(predicted, e) for e in expected), default=0.0)
    return QaScores(100.0 * em / len(gold), 100.0 * f1 / len(gold), len(gold), unanswered)
