"""Tagging scores as XTREME reports them: word accuracy, and seqeval's micro F1 over chunks.

XTREME's ``run_tag.py`` scores POS and NER alike with seqeval's ``f1_score`` (default
mode): a tag is read as a prefix letter and a type (``B-PER``: ``B``, ``PER``; a POS tag
``NOUN``: ``N``, ``OUN``), chunks are cut where seqeval's rules for IOBES prefixes say, and
sentences are joined with an ``O`` between them. For BIO tags those are the entities; for
POS tags the rules make chunks of runs of tags of one type that seqeval's prefix rules do
not split, which is what the published POS F1 figures measure. Written from seqeval's
definition (its documentation and behaviour), equal to it on real predictions (tested
against the PyPI package and XTREME's ``evaluate.py`` figures on its mock PAN-X files).

The ``O`` after each sentence ends every chunk of a tag with a type (``B-PER``, ``NOUN``), so
for such tags the chunks of sentences (or windows) counted apart sum to the counts of the
file: ``veco_tagging``'s validation F1 sums them over batches and workers. Only a tag that
seqeval reads as typeless (one letter other than B, I, E, S, O: UPOS ``X``) lets a chunk run
on across the ``O`` into the next sentence of the joined file.
"""

from typing import List, NamedTuple, Sequence, Set, Tuple

Chunk = Tuple[str, int, int]  # (type, first position, last position)
OUTSIDE = "O"


def _split(tag: str) -> Tuple[str, str]:
    """seqeval's (prefix letter, type) of a tag: ``B-PER`` -> (B, PER); ``O`` -> (O, _)."""
    return tag[0], tag[1:].split("-", maxsplit=1)[-1] or "_"


def _ends(prev_tag: str, tag: str, prev_type: str, type_: str) -> bool:
    if prev_tag in ("E", "S"):
        return True
    if prev_tag in ("B", "I") and tag in ("B", "S", "O"):
        return True
    return prev_tag not in ("O", ".") and prev_type != type_


def _starts(prev_tag: str, tag: str, prev_type: str, type_: str) -> bool:
    if tag in ("B", "S"):
        return True
    if prev_tag in ("E", "S", "O") and tag in ("E", "I"):
        return True
    return tag not in ("O", ".") and prev_type != type_


def chunks(sentences: Sequence[Sequence[str]]) -> Set[Chunk]:
    """seqeval's chunks of tagged sentences (positions over the sentences joined, an
    ``O`` after each)."""
    flat = [t for sentence in sentences for t in list(sentence) + [OUTSIDE]]
    found: List[Chunk] = []
    prev_tag, prev_type, begin = OUTSIDE, "", 0
    for i, chunk in enumerate(flat + [OUTSIDE]):
        tag, type_ = _split(chunk)
        if _ends(prev_tag, tag, prev_type, type_):
            found.append((prev_type, begin, i - 1))
        if _starts(prev_tag, tag, prev_type, type_):
            begin = i
        prev_tag, prev_type = tag, type_
    return set(found)


class ChunkCounts(NamedTuple):
    """Chunks ``predicted`` right (``correct``), ``predicted`` and in the ``gold`` tags."""

    correct: int
    predicted: int
    gold: int


def chunk_counts(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> ChunkCounts:
    """seqeval's chunk counts of ``predicted`` against ``gold`` (sentences of tags, joined)."""
    true, pred = chunks(gold), chunks(predicted)
    return ChunkCounts(len(true & pred), len(pred), len(true))


def f1_of_counts(correct: float, predicted: float, gold: float) -> float:
    """seqeval's micro F1 (in [0, 1]) of chunk counts (0 where nothing is right)."""
    if not correct:
        return 0.0
    precision, recall = correct / predicted, correct / gold
    return 2 * precision * recall / (precision + recall)


def chunk_f1(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> float:
    """seqeval's micro F1 (in [0, 1]) of ``predicted`` against ``gold`` (sentences of tags)."""
    return f1_of_counts(*chunk_counts(gold, predicted))


def accuracy(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> float:
    """Share (in [0, 1]) of words tagged as in ``gold``."""
    pairs = [(g, p) for gs, ps in zip(gold, predicted) for g, p in zip(gs, ps)]
    return sum(g == p for g, p in pairs) / max(len(pairs), 1)
