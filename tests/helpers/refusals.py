"""A console script run in-process on bad input: it must end in one line."""

from typing import Sequence

import pytest


def last_line(text: str) -> str:
    """The last non-blank line of ``text`` ("" when there is none)."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def refused(module, argv: Sequence[str], prog: str, capsys, silent: bool = False) -> str:
    """Run ``module.cli_main(argv)``; it must exit non-zero and end stderr with a line
    ``PROG: error: ...``, which is returned; ``silent``: and print nothing on stdout (a
    command whose stdout is its result)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as ended:
        module.cli_main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert ended.value.code not in (0, None), err[-2000:]
    assert not (silent and out), out[-2000:]
    line = last_line(err)
    assert line.startswith(f"{prog}: error: "), err[-2000:]
    return line
