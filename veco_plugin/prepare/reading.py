"""Streaming the segments of a corpus: one tuple of normalized lines (one per side) per
segment, never a whole file in memory.

Lines are read as :mod:`veco_plugin.corpora.text` reads them (split on ``\\n`` only,
strict UTF-8, every whitespace run one space; ``.gz`` and ``.xz`` decompressed). A
segment with an empty side is dropped and counted (``empty``); a line that is not UTF-8
and a pair of files with different line counts are errors naming the file.
"""

import itertools
import lzma
from typing import BinaryIO, Iterator, Sequence, Tuple, cast

from ..corpora.text import (
    LINE_BREAK_HINT,
    BadLine,
    DropCounts,
    line_count_error,
    normalize,
    open_bytes,
)
from ..errors import VecoUserError

Segment = Tuple[str, ...]
FIX = "fix or remove that line (and its translation, in a pair)"


def open_text(path: str) -> BinaryIO:
    """``path`` for binary reading, decompressed when it ends in ``.gz`` or ``.xz``."""
    if path.endswith(".xz"):
        try:
            return cast(BinaryIO, lzma.open(path, "rb"))
        except FileNotFoundError:
            raise VecoUserError(f"{path}: no such file") from None
    return open_bytes(path)


def _raw_lines(path: str) -> Iterator[bytes]:
    """The lines of ``path``; a damaged ``.gz``/``.xz`` is an error naming it."""
    with open_text(path) as f:
        try:
            yield from f
        except (EOFError, OSError, lzma.LZMAError) as exc:
            raise VecoUserError(
                f"{path}: cannot be read to the end ({exc or type(exc).__name__}); "
                "compress it again, or remove it"
            ) from None


def lines(path: str) -> Iterator[str]:
    """The normalized lines of ``path``; the first that is not UTF-8 is an error."""
    for lineno, raw in enumerate(_raw_lines(path), start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise VecoUserError(BadLine(path, lineno, exc).message(FIX)) from None
        yield normalize(text)


def _pair_lines(src: str, tgt: str) -> Iterator[Tuple[str, str]]:
    a_it, b_it = lines(src), lines(tgt)
    n = 0
    for a, b in itertools.zip_longest(a_it, b_it):
        if a is None or b is None:
            n_a = n + (a is not None) + sum(1 for _ in a_it)
            n_b = n + (b is not None) + sum(1 for _ in b_it)
            raise line_count_error(src, n_a, tgt, n_b, LINE_BREAK_HINT)
        n += 1
        yield a, b


def document_segments(document: Sequence[str], counts: DropCounts) -> Iterator[Segment]:
    """The kept segments of one document (a file, or a file per side), counting each
    segment read and each dropped one in ``counts``."""
    rows: Iterator[Segment]
    if len(document) == 1:
        rows = ((line,) for line in lines(document[0]))
    else:
        rows = _pair_lines(*document)
    for segment in rows:
        counts.read += 1
        if counts.keep(None if all(segment) else "empty"):
            yield segment


def corpus_segments(
    documents: Sequence[Sequence[str]], kept: Sequence[int], start: int, stop: int
) -> Iterator[Segment]:
    """Kept segments ``start`` to ``stop - 1`` of a corpus whose documents hold ``kept``
    segments each (documents before ``start`` are not opened, those after ``stop`` not
    read)."""
    offset = 0
    for document, n in zip(documents, kept):
        if offset >= stop:
            return
        if offset + n > start:
            segments = document_segments(document, DropCounts())
            yield from itertools.islice(segments, max(0, start - offset), min(n, stop - offset))
        offset += n
