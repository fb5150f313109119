"""The pre-training dictionary: a ``dict.txt`` with ``<mask>`` appended (XLM-R's layout).

Pre-training, fine-tuning and the console scripts all build it here, so token ids
and embedding rows line up across them. A file fairseq's ``Dictionary`` cannot read
(a line that is not ``<token> <count>``, a token listed twice, bytes that are not
UTF-8) is refused with its file and line number, and so is a line fairseq reads
wrongly without a word: ``foo bar 7`` (three fields) would become the token ``foo bar``,
which no whitespace-split text ever holds; the only third field fairseq knows is
``#fairseq:overwrite``. A file without a single token is refused too.

:class:`DictionaryTask` is the task a model or criterion is built with outside
fairseq-train (``veco-init-nmt``, the benchmarks, the unit tests).
"""

import io
import os
from typing import Optional

from fairseq.data import Dictionary

from ..errors import VecoUserError

MASK = "<mask>"
OVERWRITE = "#fairseq:overwrite"  # the one flag fairseq reads after a count


class DictionaryTask:
    """What ``build_model`` and criterion builders read from a task: one (joined)
    dictionary as ``dictionary``/``source_dictionary``/``target_dictionary``, and
    ``max_positions()``."""

    def __init__(self, dictionary: Dictionary, max_positions: int = 512) -> None:
        self.dictionary = self.source_dictionary = self.target_dictionary = dictionary
        self._max_positions = max_positions

    def max_positions(self) -> int:
        return self._max_positions


def _first_bad_line(path: str) -> Optional[str]:
    """``path:N: why`` for the first line fairseq's own parser rejects, fed one line at a
    time (so the parsing rules stay fairseq's)."""
    dictionary = Dictionary()
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, start=1):
            where = f"{path}:{lineno}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                byte = exc.object[exc.start : exc.start + 1].hex()
                return f"{where}: not valid UTF-8 (byte 0x{byte} at column {exc.start + 1})"
            try:
                dictionary.add_from_file(io.StringIO(line))
            except ValueError:
                return (
                    f"{where}: {line.rstrip()!r} is not '<token> <count>' (a token, one space, "
                    "an integer count)"
                )
            except RuntimeError:  # fairseq: "Duplicate word found"
                token = line.rstrip().rsplit(" ", 1)[0]
                return f"{where}: {token!r} is listed twice (or is a special symbol fairseq adds)"
    return None


def _first_multi_field_line(path: str) -> Optional[str]:
    """``path:N: why`` for the first line with more than ``<token> <count>`` (and
    ``#fairseq:overwrite``): fairseq keeps all but the count as one token."""
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            fields = line.split()
            if fields[-1:] == [OVERWRITE]:
                fields = fields[:-1]
            if len(fields) > 2:
                return (
                    f"{path}:{lineno}: {line.rstrip()!r} has {len(fields)} fields, not "
                    f"'<token> <count>' (a third may only be {OVERWRITE})"
                )
    return None


def load_dictionary(path: str) -> Dictionary:
    """``Dictionary.load(path)``; a malformed file raises :class:`VecoUserError` naming
    the file and line."""
    if os.path.isdir(path):
        raise VecoUserError(f"{path} is a directory: name the dictionary file (dict.txt)")
    try:
        dictionary = Dictionary.load(path)
    except FileNotFoundError:
        raise VecoUserError(f"{path}: no such dictionary file") from None
    except Exception:  # fairseq's refusals: ValueError, RuntimeError, Exception
        reason = _first_bad_line(path)
        if reason is None:
            raise  # not a malformed line: a real error, keep its traceback
    else:
        tokens = dictionary.symbols[dictionary.nspecial :]
        if not tokens:
            raise VecoUserError(
                f"{path}: no tokens (an empty dictionary); pass the pre-trained model's dict.txt"
            )
        reason = None
        if any(" " in t or "\t" in t for t in tokens):
            reason = _first_multi_field_line(path)
        if reason is None:
            return dictionary
    raise VecoUserError(f"{reason}: fix that line (or use the pre-trained model's dict.txt)")


def load_dictionary_with_mask(path: str) -> Dictionary:
    """``Dictionary.load(path)`` plus ``<mask>`` as the last symbol."""
    dictionary = load_dictionary(path)
    dictionary.add_symbol(MASK)
    return dictionary
