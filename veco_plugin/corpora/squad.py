"""Extractive QA data in the SQuAD v1.1 JSON format, as published.

XQuAD (``xquad.<lang>.json``), MLQA and TyDiQA-GoldP use the same layout::

    {"version": "1.1",
     "data": [{"title": T,
               "paragraphs": [{"context": C,
                               "qas": [{"id": ID, "question": Q,
                                        "answers": [{"text": A, "answer_start": N}]}]}]}]}

``answer_start`` N is a character offset (Python ``str`` index) into C, and
``C[N:N + len(A)] == A`` must hold. :func:`read_squad` checks every answer, every key and
every type, and refuses a file it cannot use with a :class:`VecoUserError` of one line
naming the file (and the question id) and the fix.

Files XTREME's download rewrites (``utils_preprocess.py``) drop ``title``, which is
therefore optional:

* its English TyDiQA-GoldP train file (``tydiqa-goldp-v1.1-train/tydiqa.goldp.en.train.json``,
  one article per question) keeps only the last ``-`` part of each id, so ids repeat
  (``"0"``, ``"1"``, ...): read it with ``unique_ids=False`` (training needs no id);
* its QA test files (XQuAD, MLQA's ``test/``, TyDiQA-GoldP's dev) have every answer
  replaced by ``{"answer_start": 0, "text": ""}``: refused, saying where labelled copies
  are (:data:`LABELLED_COPIES`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Set, Tuple

from ..errors import VecoUserError

LABELLED_COPIES = (
    "labelled copies: XQuAD github.com/deepmind/xquad xquad.<lang>.json; MLQA "
    "dl.fbaipublicfiles.com/MLQA/MLQA_V1.zip MLQA_V1/test/test-context-<lang>-question-<lang>"
    ".json; TyDiQA-GoldP storage.googleapis.com/tydiqa/v1.1/tydiqa-goldp-v1.1-dev.tgz "
    "tydiqa-goldp-dev-<language>.json"
)


@dataclass(frozen=True)
class Answer:
    """A gold answer: ``text`` at characters ``[start, start + len(text))`` of the context."""

    text: str
    start: int

    @property
    def end(self) -> int:
        """One past the answer's last character."""
        return self.start + len(self.text)


@dataclass(frozen=True)
class QaExample:
    """One question on one context, with its gold answers (one in train files, one or
    more in evaluation files)."""

    id: str
    title: str
    question: str
    context: str
    answers: Tuple[Answer, ...]


def _field(path: str, item: Any, key: str, kind: type, where: str) -> Any:
    """``item[key]``, which must be a ``kind``; else the one line naming the file."""
    if not isinstance(item, dict) or key not in item:
        raise VecoUserError(
            f"{path}: {where} has no {key!r} key: give SQuAD v1.1 JSON "
            '({"data": [{"title", "paragraphs": [{"context", "qas": [...]}]}]})'
        )
    value = item[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise VecoUserError(
            f"{path}: {key!r} of {where} is a {type(value).__name__}, not a {kind.__name__}: "
            "give SQuAD v1.1 JSON"
        )
    return value


def _load(path: str) -> Any:
    """The parsed JSON of ``path``; a missing, non-UTF-8 or non-JSON file is refused."""
    if os.path.isdir(path):
        raise VecoUserError(f"{path} is a directory: give the SQuAD-format JSON file")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise VecoUserError(f"{path}: no such file (a SQuAD-format JSON file)") from None
    except UnicodeDecodeError as exc:
        raise VecoUserError(
            f"{path}: not UTF-8 (byte {exc.start}): save the file as UTF-8 JSON"
        ) from None
    except json.JSONDecodeError as exc:
        raise VecoUserError(
            f"{path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}): give the "
            "SQuAD v1.1 JSON file as published"
        ) from None


def _answers(path: str, qa: Dict[str, Any], qid: str, context: str) -> Tuple[Answer, ...]:
    where = f"question {qid}"
    answers = []
    for item in _field(path, qa, "answers", list, where):
        text = _field(path, item, "text", str, f"an answer of {where}")
        start = _field(path, item, "answer_start", int, f"an answer of {where}")
        if not text and start == 0:
            raise VecoUserError(
                f"{path}: question {qid} has an empty answer at 0, as XTREME's download leaves "
                f"its QA test files (answers stripped): give a labelled copy; {LABELLED_COPIES}"
            )
        if not text:
            raise VecoUserError(
                f"{path}: question {qid} has an empty answer text: every SQuAD v1.1 answer "
                "is a non-empty span of its context"
            )
        if start < 0 or context[start : start + len(text)] != text:
            found = context[max(start, 0) : max(start, 0) + len(text)]
            raise VecoUserError(
                f"answer_start {start} of question {qid} in {path} is not its text: "
                f"{text!r} expected, the context has {found!r} there; fix the offset "
                "(a character index into the context)"
            )
        answers.append(Answer(text, start))
    if not answers:
        raise VecoUserError(
            f"{path}: question {qid} has no answers: SQuAD v1.1 files (XQuAD, MLQA, "
            "TyDiQA-GoldP) give every question one or more"
        )
    return tuple(answers)


def read_squad(path: str, unique_ids: bool = True) -> List[QaExample]:
    """The examples of a SQuAD v1.1-format JSON file, in file order.

    Every answer must be its context's text at its ``answer_start``; ids must be unique
    (predictions are keyed by them) unless ``unique_ids`` is False; a missing ``title``
    reads as ``""``. Anything else is a :class:`VecoUserError` of one line.
    """
    data = _field(path, _load(path), "data", list, "the file")
    examples: List[QaExample] = []
    seen: Set[str] = set()
    for a, article in enumerate(data, 1):
        titled = isinstance(article, dict) and "title" in article
        title = _field(path, article, "title", str, f"article {a}") if titled else ""
        for p, paragraph in enumerate(_field(path, article, "paragraphs", list, f"article {a}"), 1):
            where = f"paragraph {p} of article {a}" + (f" ({title})" if title else "")
            context = _field(path, paragraph, "context", str, where)
            for qa in _field(path, paragraph, "qas", list, where):
                qid = _field(path, qa, "id", str, f"a question of {where}")
                question = _field(path, qa, "question", str, f"question {qid}")
                if unique_ids and qid in seen:
                    raise VecoUserError(
                        f"question id {qid} appears twice in {path}: ids must be unique "
                        "(predictions are keyed by them)"
                    )
                seen.add(qid)
                answers = _answers(path, qa, qid, context)
                examples.append(QaExample(qid, title, question, context, answers))
    if not examples:
        raise VecoUserError(f"{path}: no questions ('data' holds none): give a SQuAD v1.1 file")
    return examples


def gold_answers(examples: List[QaExample]) -> Dict[str, List[str]]:
    """``{id: [gold answer texts]}``, what the SQuAD/MLQA scorers compare against."""
    return {e.id: [a.text for a in e.answers] for e in examples}
