"""Tagged sentences -> model windows, XTREME's conventions (``third_party/utils_tag.py`` and
its preprocessing, written from their description):

* each word is split into pieces **on its own** (sentencepiece sees the word alone, so it
  starts with the whitespace marker); a word the model's sentencepiece makes nothing of
  (e.g. a lone zero-width character) reads as ``<unk>``, so it is still scored;
* the tag sits on the word's **first piece**; its other pieces, ``<s>`` and ``</s>`` carry
  none (``None``: the loss ignores them);
* a sentence of more pieces than a window holds is cut, between words, into consecutive
  windows of at most ``max_pieces`` pieces (never truncated: every word is in exactly one
  window); a single word longer than a window keeps its first ``max_pieces`` pieces.
"""

from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

from ..corpora.tagging import TaggedSentence

UNK_PIECE = "<unk>"
# words -> their pieces, one list per word (a sentencepiece processor's batch encode)
WordEncoder = Callable[[List[str]], List[List[str]]]


@dataclass(frozen=True)
class Window:
    """Words ``first_word`` .. ``first_word + len(words) - 1`` of sentence ``sentence``:
    ``pieces`` (P,) without ``<s>``/``</s>`` and ``tags`` (P,), the word's tag at its first
    piece and None elsewhere; ``starts`` (W,): each word's first piece in ``pieces``."""

    sentence: int
    first_word: int
    pieces: Tuple[str, ...]
    tags: Tuple[Optional[str], ...]
    starts: Tuple[int, ...]


def word_pieces(encode: WordEncoder, sentences: Sequence[TaggedSentence]) -> List[List[List[str]]]:
    """Each word of each sentence encoded alone -> ``[sentence][word] = pieces``."""
    words = [w for s in sentences for w in s.words]
    flat = encode(words) if words else []
    out, at = [], 0
    for s in sentences:
        out.append([pieces or [UNK_PIECE] for pieces in flat[at : at + len(s.words)]])
        at += len(s.words)
    return out


def windows(
    sentences: Sequence[TaggedSentence], pieces: Sequence[Sequence[Sequence[str]]], max_pieces: int
) -> List[Window]:
    """The windows of every sentence, in order (``pieces`` from :func:`word_pieces`)."""
    if max_pieces < 1:
        raise ValueError(f"max_pieces {max_pieces}: a window holds at least one piece")
    out: List[Window] = []
    for number, (sentence, words) in enumerate(zip(sentences, pieces)):
        first = 0
        current: List[str] = []
        tags: List[Optional[str]] = []
        starts: List[int] = []
        for index, (tag, word) in enumerate(zip(sentence.tags, words)):
            word = list(word[:max_pieces])
            if current and len(current) + len(word) > max_pieces:
                out.append(Window(number, first, tuple(current), tuple(tags), tuple(starts)))
                first, current, tags, starts = index, [], [], []
            starts.append(len(current))
            current.extend(word)
            tags.extend([tag] + [None] * (len(word) - 1))
        out.append(Window(number, first, tuple(current), tuple(tags), tuple(starts)))
    return out
