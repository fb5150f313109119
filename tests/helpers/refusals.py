"""A console script run through its entry point in the test process (no start-up of an
interpreter, torch and fairseq): on bad input it must end in one line; a re-run that only
skips must end with status 0."""

import contextlib
import importlib
import io
import subprocess
import sys
from typing import Sequence

import pytest

from veco_plugin.errors import VecoUserError, one_line


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


def ran(module, argv: Sequence[str], capsys=None) -> subprocess.CompletedProcess:
    """Run ``module.cli_main(argv)``; it must end with status 0: what it wrote (with
    ``capsys``; a module fixture has none, and gets "")."""
    if capsys is not None:
        capsys.readouterr()
    try:
        module.cli_main([str(a) for a in argv])
    except SystemExit as ended:
        assert ended.code in (0, None), f"{module.__name__} ended with {ended.code}"
    out, err = capsys.readouterr() if capsys is not None else ("", "")
    return subprocess.CompletedProcess([module.__name__, *argv], 0, out, err)


FAIRSEQ = {"fairseq-train": "fairseq_cli.train", "fairseq-generate": "fairseq_cli.generate"}


def fairseq_in_process(script: str, args: Sequence) -> subprocess.CompletedProcess:
    """``script`` (fairseq-train or fairseq-generate) on ``args`` in this process: its
    installed entry point (``fairseq_cli.*.cli_main``) without the start-up of an
    interpreter, torch and fairseq; ended as the script ends: a ``VecoUserError`` is exit
    status 1 and the one line the script's excepthook writes
    (:func:`veco_plugin.errors.one_line`), a parser's exit its status and stderr. Any other
    exception is raised (a test failure, with its traceback). What only the script's own
    process shows (the hook ending the process, its exit status, a launcher's ranks):
    tests/unit/test_errors.py, tests of the installed script. Not thread-safe
    (``sys.argv``)."""
    entry = importlib.import_module(FAIRSEQ[script])
    command = [script, *map(str, args)]
    argv, sys.argv = sys.argv, command
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            entry.cli_main()
        code = 0
    except SystemExit as ended:
        code = ended.code if isinstance(ended.code, int) else 1
    except VecoUserError as error:
        code = 1
        err.write(one_line(VecoUserError, error) + "\n")  # the prog: sys.argv[0]'s name
    finally:
        sys.argv = argv
    return subprocess.CompletedProcess(command, code, "", err.getvalue())


def fairseq_refused(script: str, args: Sequence) -> str:
    """The line ``script`` refuses ``args`` with (:func:`fairseq_in_process`): a non-zero
    exit, no traceback, a last line ``SCRIPT: error: ...``."""
    proc = fairseq_in_process(script, args)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    line = last_line(proc.stderr)
    assert line.startswith(f"{script}: error: "), proc.stderr[-2000:]
    return line


def train_refused(args: Sequence) -> str:
    """:func:`fairseq_refused` of fairseq-train."""
    return fairseq_refused("fairseq-train", args)
