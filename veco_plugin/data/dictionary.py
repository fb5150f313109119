"""The pre-training dictionary: a ``dict.txt`` with ``<mask>`` appended (XLM-R's layout).

Pre-training, fine-tuning and the console scripts all build it here, so token ids
and embedding rows line up across them. A file fairseq's ``Dictionary`` cannot read
(a line that is not ``<token> <count>``, a token listed twice, bytes that are not
UTF-8) is refused with its file and line number.

:class:`DictionaryTask` is the task a model or criterion is built with outside
fairseq-train (``veco-init-nmt``, the benchmarks, the unit tests).
"""

import io
from typing import Optional

from fairseq.data import Dictionary

from ..errors import VecoUserError

MASK = "<mask>"


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


def load_dictionary(path: str) -> Dictionary:
    """``Dictionary.load(path)``; a malformed file raises :class:`VecoUserError` naming
    the file and line."""
    try:
        return Dictionary.load(path)
    except FileNotFoundError:
        raise VecoUserError(f"{path}: no such dictionary file") from None
    except Exception:  # fairseq's refusals: ValueError, RuntimeError, Exception
        reason = _first_bad_line(path)
        if reason is None:
            raise  # not a malformed line: a real error, keep its traceback
    raise VecoUserError(f"{reason}: fix that line (or use the pre-trained model's dict.txt)")


def load_dictionary_with_mask(path: str) -> Dictionary:
    """``Dictionary.load(path)`` plus ``<mask>`` as the last symbol."""
    dictionary = load_dictionary(path)
    dictionary.add_symbol(MASK)
    return dictionary
