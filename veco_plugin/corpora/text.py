"""Text files as the corpus builders read and write them.

Reading: lines are split on ``\\n`` only and decoded as strict UTF-8; a line that is not
UTF-8 is reported as ``FILE line N: not valid UTF-8 (byte 0xXX at column C); FIX`` (the
caller chooses FIX, or drops the line and counts it). ``.gz`` files are read
transparently (one that is truncated or no gzip at all is one line too).
:func:`normalize` collapses every whitespace run (tabs, stray ``\\r``, U+2028 ...) to one
space, so fairseq-preprocess, which also breaks lines at ``\\r``, sees the same lines.

Writing: :func:`write_lines` writes ``PATH.part`` and renames it, so a killed run never
leaves a half-written file under the final name; :func:`..outputs.check_output_dir` refuses an
output directory that cannot be made before any work is done.

Cleaning: :class:`DropCounts` is the one "keep, or drop and count the reason" of every
cleaner (gettext catalogs, WMT14 training pairs).
"""

from __future__ import annotations

import gzip
import os
import zlib
from typing import (
    BinaryIO,
    Dict,
    Iterable,
    Iterator,
    List,
    Optional,
    Tuple,
    Type,
    TypeVar,
    Union,
    cast,
)

from ..errors import VecoUserError
from ..outputs import atomic_path

T = TypeVar("T")

FIX_LINE = "fix or remove that line"
FIX_PAIR_LINE = "fix or remove that line (and its translation)"
LINE_BREAK_HINT = (
    " (the usual cause is a stray \\r or other line break inside a sentence, e.g. from a "
    "tool that splits lines on \\r)"
)


def normalize(text: str) -> str:
    """Collapse every whitespace run (incl. ``\\r``, tabs, U+2028) to one space."""
    return " ".join(text.split())


def open_bytes(path: str) -> BinaryIO:
    """``path`` opened for binary reading, gunzipped when it ends in ``.gz``; a missing
    file is a :class:`VecoUserError` naming it."""
    if not os.path.isfile(path):
        raise VecoUserError(f"{path}: no such file")
    if path.endswith(".gz"):
        return cast(BinaryIO, gzip.open(path, "rb"))
    return open(path, "rb")


class BadLine:
    """A line that is not UTF-8: where it is, for the error message."""

    def __init__(self, shown: str, lineno: int, exc: UnicodeDecodeError):
        self.shown, self.lineno, self.exc = shown, lineno, exc

    def message(self, fix: str = FIX_LINE) -> str:
        byte = self.exc.object[self.exc.start : self.exc.start + 1].hex()
        return (
            f"{self.shown} line {self.lineno}: not valid UTF-8 "
            f"(byte 0x{byte} at column {self.exc.start + 1}); {fix}"
        )


def read_lines(
    path: str, shown: Optional[str] = None, keep_raw: bool = False
) -> Iterator[Union[str, BadLine]]:
    """Decoded, whitespace-normalized lines of ``path`` (``keep_raw``: only the line break
    stripped); a :class:`BadLine` where a line is not UTF-8 (the caller decides whether
    that is fatal). ``shown``: the name used in messages (default ``path``)."""
    shown = path if shown is None else shown
    with open_bytes(path) as f:
        lineno = 0
        try:
            for lineno, raw in enumerate(f, start=1):
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    yield BadLine(shown, lineno, exc)
                    continue
                yield text.rstrip("\r\n") if keep_raw else normalize(text)
        except (gzip.BadGzipFile, EOFError, zlib.error) as exc:  # a .gz file only
            raise VecoUserError(
                f"{shown}: not a complete gzip file after {lineno} lines ({exc}); download or "
                "compress it again, or drop the .gz from its name if it is plain text"
            ) from None


def strict(lines: Iterable[Union[str, BadLine]], fix: str = FIX_LINE) -> Iterator[str]:
    """The lines of :func:`read_lines`; the first that is not UTF-8 is a
    :class:`VecoUserError` ending in ``fix``."""
    for line in lines:
        if isinstance(line, BadLine):
            raise VecoUserError(line.message(fix)) from line.exc
        yield line


def read_lines_strict(
    path: str, shown: Optional[str] = None, keep_raw: bool = False, fix: str = FIX_LINE
) -> List[str]:
    """All lines of :func:`read_lines`; the first that is not UTF-8 is an error."""
    return list(strict(read_lines(path, shown, keep_raw), fix))


def count_lines(path: str, shown: Optional[str] = None, fix: str = FIX_LINE) -> int:
    """The number of lines of ``path``, each checked to be UTF-8."""
    return sum(1 for _ in strict(read_lines(path, shown, keep_raw=True), fix))


def line_count_error(a: str, n_a: int, b: str, n_b: int, hint: str = "") -> VecoUserError:
    """The error for two sides of a parallel corpus with different line counts."""
    return VecoUserError(
        f"{a} has {n_a} lines but {b} has {n_b}: the sides of a parallel corpus must match "
        f"line by line{hint}"
    )


def check_parallel_text(
    pairs: Iterable[Tuple[str, str]], others: Iterable[str] = (), fix: str = FIX_PAIR_LINE
) -> Dict[str, int]:
    """Check that every file is UTF-8 and that the two files of each pair have the same
    number of lines; {path: line count}."""
    pairs = list(pairs)
    counts: Dict[str, int] = {}
    for path in [p for pair in pairs for p in pair] + list(others):
        if path not in counts:
            counts[path] = count_lines(path, fix=fix)
    for a, b in pairs:
        if counts[a] != counts[b]:
            raise line_count_error(a, counts[a], b, counts[b])
    return counts


def _count_rest(it: Iterator) -> int:
    return sum(1 for _ in it)


def read_parallel(
    src_path: str,
    tgt_path: str,
    src_shown: str,
    tgt_shown: str,
    counts: "DropCounts",
    drop_bad_utf8: bool = False,
    fix: str = FIX_LINE,
) -> Iterator[Tuple[str, str]]:
    """Normalized line pairs of two aligned files, without reading them whole.

    A line that is not UTF-8 is an error ending in ``fix``, or (``drop_bad_utf8``) its
    pair is dropped and counted as ``bad_utf8``; unequal line counts are an error.
    """
    a_it, b_it = read_lines(src_path, src_shown), read_lines(tgt_path, tgt_shown)
    n = 0
    while True:
        a = next(a_it, None)
        b = next(b_it, None)
        if a is None or b is None:
            if a is None and b is None:
                return
            n_a = n + (0 if a is None else 1 + _count_rest(a_it))
            n_b = n + (0 if b is None else 1 + _count_rest(b_it))
            raise line_count_error(src_shown, n_a, tgt_shown, n_b, LINE_BREAK_HINT)
        n += 1
        if isinstance(a, BadLine) or isinstance(b, BadLine):
            if not drop_bad_utf8:
                bad = a if isinstance(a, BadLine) else b
                assert isinstance(bad, BadLine)
                raise VecoUserError(bad.message(fix)) from bad.exc
            counts.drop("bad_utf8")
            continue
        yield a, b


def input_file(path: str, flag: str = "", error: Type[Exception] = VecoUserError) -> str:
    """``path`` if it is a file; a missing path or a directory is an ``error`` naming
    ``flag``."""
    named = f"{flag} {path}" if flag else path
    if os.path.isdir(path):
        raise error(f"{named} is a directory: name a file")
    if not os.path.isfile(path):
        raise error(f"{named}: no such file")
    return path


def write_lines(path: str, lines: Iterable[str]) -> None:
    """Write ``lines`` (each + ``\\n``, UTF-8) to ``path`` atomically (``atomic_path``)."""
    with atomic_path(path) as part, open(part, "w", encoding="utf-8", newline="\n") as f:
        for line in lines:
            f.write(line + "\n")


def chunks(items: Iterable[T], size: int) -> Iterator[List[T]]:
    """Consecutive lists of ``size`` items (the last may be shorter)."""
    buf: List[T] = []
    for x in items:
        buf.append(x)
        if len(buf) == size:
            yield buf
            buf = []
    if buf:
        yield buf


# ----------------------------------------------------------------------------- cleaning


def ratio_exceeds(n_a: int, n_b: int, max_ratio: float) -> bool:
    """Whether the longer side has more than ``max_ratio`` times the tokens of the other."""
    return max(n_a, n_b) > max_ratio * min(n_a, n_b)


class DropCounts:
    """How many items were read, kept, and dropped for each reason.

    ``keep(reason)`` is the one decision of every cleaner: None keeps (and counts) the
    item, a reason drops it and counts the reason. :meth:`as_dict` lists ``read``,
    ``kept`` and the reasons in the order they first occurred.
    """

    def __init__(self) -> None:
        self.read = 0
        self.kept = 0
        self.dropped: Dict[str, int] = {}

    def keep(self, reason: Optional[str]) -> bool:
        """Count one item: True to keep it (``reason`` None), else False."""
        if reason is None:
            self.kept += 1
            return True
        self.drop(reason)
        return False

    def drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1

    def update(self, other: "DropCounts") -> None:
        self.read += other.read
        self.kept += other.kept
        for reason, n in other.dropped.items():
            self.dropped[reason] = self.dropped.get(reason, 0) + n

    def as_dict(self) -> Dict[str, int]:
        return {"read": self.read, "kept": self.kept, **self.dropped}

    def summary(self, noun: str = "pairs") -> str:
        """``kept K of R pairs (dropped: reason n, ...)`` (reasons sorted)."""
        line = f"kept {self.kept} of {self.read} {noun}"
        if self.dropped:
            line += " (dropped: " + ", ".join(f"{k} {v}" for k, v in sorted(self.dropped.items()))
            line += ")"
        return line
