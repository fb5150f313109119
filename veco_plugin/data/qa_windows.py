"""Question + context windows over sentencepiece pieces, as XTREME's ``run_squad.py``
cuts them (its defaults here: ``max_length`` 384, ``max_question`` 64, ``doc_stride`` 128).

A window is XLM-R's sentence-pair layout (fairseq's RoBERTa ``encode(a, b)``)::

    <s> q_1 .. q_Q </s> </s> c_k .. c_{k+L-1} </s>          (T = Q + L + 4 <= max_length)

with the question's first ``max_question`` pieces and L = ``max_length - Q - 4`` context
pieces (fewer in the last window). ``doc_stride`` is the step between window starts:
window ``w`` starts at context piece ``k = w * doc_stride``; windows are added until one
reaches the context's last piece, so consecutive windows overlap by ``L - doc_stride``
pieces and every piece lies in at least one window.

Every context piece keeps its character span ``[begin, end)`` in the ORIGINAL context
string, from sentencepiece's own alignment of its (NFKC-normalised) pieces to the input
(:func:`piece_spans`): the whitespace a ``▁`` marks is not part of a span, and a character
that normalisation expands into several pieces (``½`` -> ``1 ⁄ 2``) belongs to the last
of them (the others have empty spans). Answers cut from these spans are substrings of
the original context, whatever normalisation did.

Training targets: a window holding every piece of the (first) answer gets the positions
of its first and last piece; any other window points both at position 0 (``<s>``).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple

from ..corpora.squad import Answer, QaExample
from ..errors import VecoUserError

Span = Tuple[int, int]  # [begin, end) characters of the original text
SPECIALS = 4  # <s>, </s> </s> between question and context, </s>
WHITESPACE_MARK = "\u2581"  # sentencepiece's ▁


@dataclass(frozen=True)
class QaWindowSettings:
    """Window sizes, in pieces (XTREME ``run_squad.py``: ``--max_seq_length 384
    --max_query_length 64 --doc_stride 128``)."""

    max_length: int = 384
    max_question: int = 64
    doc_stride: int = 128

    def __post_init__(self) -> None:
        room = self.max_length - self.max_question - SPECIALS
        if room < 1 or not 1 <= self.doc_stride <= room:
            raise VecoUserError(
                f"doc stride {self.doc_stride} with max length {self.max_length} and max "
                f"question {self.max_question}: a window has room for {room} context pieces "
                "(max length - max question - 4), and the stride must be 1 to that room so "
                "that windows overlap; lower the stride or the question length, or raise the "
                "max length"
            )


@dataclass(frozen=True)
class QaWindow:
    """One window of one example.

    Attributes:
        example_id: the question's id
        tokens: (T,) dictionary ids ``<s> question </s> </s> context part </s>``
        context_offset: position in ``tokens`` of the first context piece (Q + 3)
        doc_start: index of that piece among all the context's pieces (``w * doc_stride``)
        spans: (L,) character span in the original context of each context piece here
        max_context: (L,) whether this window gives the piece its most context (of all
            windows holding it: the largest ``min(left, right) + 0.01 * L``, the first on
            ties), as XTREME's decoder requires of an answer's first piece
        start_position, end_position: positions in ``tokens`` of the answer's first and
            last piece; both 0 (``<s>``) when the window does not hold the whole answer
    """

    example_id: str
    tokens: Tuple[int, ...]
    context_offset: int
    doc_start: int
    spans: Tuple[Span, ...]
    max_context: Tuple[bool, ...]
    start_position: int = 0
    end_position: int = 0

    @property
    def context_end(self) -> int:
        """One past the position of the last context piece in ``tokens``."""
        return self.context_offset + len(self.spans)


def _char_index(text: str) -> List[int]:
    """``index[b]`` = the character holding byte ``b`` of ``text``'s UTF-8 (len(text) at
    the end): (bytes + 1,)."""
    index: List[int] = []
    for i, ch in enumerate(text):
        index.extend([i] * len(ch.encode("utf-8")))
    index.append(len(text))
    return index


def spans_from_byte_offsets(text: str, pieces: Sequence[Any]) -> List[Span]:
    """Character spans of pieces that carry UTF-8 byte offsets ``begin``/``end`` into
    ``text`` (sentencepiece's ``SentencePieceText`` pieces)."""
    index = _char_index(text)
    return [(index[p.begin], index[p.end]) for p in pieces]


def _raw_spans(sp: Any, text: str) -> Tuple[List[str], List[Span]]:
    """sentencepiece's pieces of ``text`` and their character spans in it (as
    sentencepiece reports them: a ``▁`` piece's span holds the whitespace it replaced)."""
    try:  # sentencepiece >= 0.2.1
        found = sp.encode(text, out_type="offset_mapping")
    except (ValueError, RuntimeError, TypeError):  # older: no such out_type
        found = None
    if isinstance(found, dict):
        return list(found["pieces"]), [(int(b), int(e)) for b, e in found["offsets"]]
    if hasattr(sp, "encode_as_immutable_proto"):  # sentencepiece 0.1.97 .. 0.2.0
        pieces = sp.encode_as_immutable_proto(text).pieces
        return [p.piece for p in pieces], spans_from_byte_offsets(text, pieces)
    import sentencepiece

    raise VecoUserError(
        f"sentencepiece {getattr(sentencepiece, '__version__', '?')} cannot report where its "
        "pieces are in the text (QA answers need that): pip install 'sentencepiece>=0.1.97'"
    )


def _blank(ch: str) -> bool:
    """Whitespace as sentencepiece's normaliser treats it (also format characters such as
    the zero-width space, which it turns into ``▁``)."""
    return ch.isspace() or unicodedata.category(ch) == "Cf"


def piece_spans(sp: Any, text: str) -> Tuple[List[str], List[Span]]:
    """The pieces of ``text`` and each piece's span ``[begin, end)`` in ``text`` without
    the whitespace a leading ``▁`` stands for: (N,), (N,). A piece made of ``▁`` alone gets
    the empty span at the end of its whitespace."""
    pieces, spans = _raw_spans(sp, text)
    trimmed = []
    for piece, (begin, end) in zip(pieces, spans):
        if piece.startswith(WHITESPACE_MARK):
            while begin < end and _blank(text[begin]):
                begin += 1
        trimmed.append((begin, end))
    return pieces, trimmed


def piece_ids(pieces: Sequence[str], dictionary: Any) -> List[int]:
    """fairseq ``Dictionary`` ids of sentencepiece pieces (``<unk>`` for unknown ones),
    as ``dictionary.encode_line`` reads the space-joined pieces of the corpus readers."""
    return [dictionary.index(p) for p in pieces]


def answer_pieces(spans: Sequence[Span], answer: Answer) -> Optional[Tuple[int, int]]:
    """First and last piece (indices into ``spans``) covering ``answer``'s characters:
    the pieces overlapping it. None when no piece does."""
    covering = [
        i for i, (b, e) in enumerate(spans) if b < e and b < answer.end and e > answer.start
    ]
    return (covering[0], covering[-1]) if covering else None


def window_starts(pieces: int, room: int, stride: int) -> List[int]:
    """Starts ``0, stride, 2 * stride, ..`` of the windows of ``room`` pieces covering
    ``pieces`` context pieces (one window for an empty context)."""
    starts = [0]
    while starts[-1] + room < pieces:
        starts.append(starts[-1] + stride)
    return starts


def _max_context(starts: List[int], lengths: List[int], w: int, piece: int) -> bool:
    """Whether window ``w`` gives context piece ``piece`` the most context."""
    best, best_score = -1, -1.0
    for v, (start, length) in enumerate(zip(starts, lengths)):
        if start <= piece < start + length:
            score = min(piece - start, start + length - 1 - piece) + 0.01 * length
            if score > best_score:
                best, best_score = v, score
    return best == w


def make_windows(
    example: QaExample,
    sp: Any,
    dictionary: Any,
    settings: QaWindowSettings = QaWindowSettings(),
) -> List[QaWindow]:
    """The windows of ``example`` (:class:`QaWindow`), targets from its first answer."""
    question = piece_ids(sp.encode(example.question, out_type=str), dictionary)
    question = question[: settings.max_question]
    pieces, spans = piece_spans(sp, example.context)
    ids = piece_ids(pieces, dictionary)
    room = settings.max_length - len(question) - SPECIALS
    starts = window_starts(len(ids), room, settings.doc_stride)
    lengths = [min(room, len(ids) - s) for s in starts]
    target = answer_pieces(spans, example.answers[0])
    bos, eos = dictionary.bos(), dictionary.eos()
    offset = len(question) + 3
    windows = []
    for w, (start, length) in enumerate(zip(starts, lengths)):
        first, last = 0, 0
        if target is not None and start <= target[0] and target[1] < start + length:
            first, last = offset + target[0] - start, offset + target[1] - start
        windows.append(
            QaWindow(
                example_id=example.id,
                tokens=(bos, *question, eos, eos, *ids[start : start + length], eos),
                context_offset=offset,
                doc_start=start,
                spans=tuple(spans[start : start + length]),
                max_context=tuple(
                    _max_context(starts, lengths, w, p) for p in range(start, start + length)
                ),
                start_position=first,
                end_position=last,
            )
        )
    return windows
