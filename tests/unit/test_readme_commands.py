"""Every command line the READMEs show names flags its program has.

The bash blocks of README.md and examples/*/README.md are read as a user copies them
(continuation lines joined, comments dropped, ``$(which X)`` as X). A console script of
this package or a ``scripts/*.sh`` (run outside the project's venv, as a user types it)
is asked for ``--help`` and each ``--flag`` of the line must be in that text; a
``fairseq-*`` line is parsed in-process by fairseq's own parser (which adds the flags of
the task, architecture, criterion, optimizer and scheduler the line names), and must
leave no flag unknown.
"""

import contextlib
import functools
import io
import re
import shlex
import subprocess
from pathlib import Path
from typing import List, Tuple

import pytest
from fairseq import options

from tests.helpers.runner import BIN, REPO, USER_DIR

READMES = [Path(REPO, "README.md"), *sorted(Path(REPO, "examples").glob("*/README.md"))]
FAIRSEQ = {
    "fairseq-train": options.get_training_parser,
    "fairseq-preprocess": options.get_preprocessing_parser,
    "fairseq-generate": options.get_generation_parser,
    "fairseq-interactive": options.get_interactive_generation_parser,
}


def console_scripts() -> List[str]:
    return re.findall(r'"(veco-[a-z0-9-]+) = ', Path(REPO, "setup.py").read_text())


def commands() -> List[Tuple[str, str, List[str]]]:
    """(where, program, words) of every command of the READMEs' bash blocks."""
    found = []
    for readme in READMES:
        text = readme.read_text(encoding="utf-8")
        for block in re.findall(r"```bash\n(.*?)```", text, re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = re.sub(r"\$\(which ([\w-]+)\)", r"\1", line)
                for part in re.split(r"&&|\|\||;|\|", line):
                    words = shlex.split(part, comments=True)
                    program, args = _program(words)
                    if program:
                        found.append((f"{readme.name}: {part.strip()[:60]}", program, args))
    return found


def _program(words: List[str]) -> Tuple[str, List[str]]:
    """The program a command runs and its arguments ('' for others: make, export ...)."""
    while words and re.match(r"^[A-Z_]+=", words[0]):  # VAR=value prefixes
        words = words[1:]
    if not words:
        return "", []
    if words[0] == "bash" and len(words) > 1 and words[1].startswith("scripts/"):
        return words[1], words[2:]
    if words[0] == "torchrun":
        tail = [w for w in words if w.startswith("fairseq-")]
        return (tail[0], words[words.index(tail[0]) + 1 :]) if tail else ("torchrun", [])
    if words[0] in console_scripts() or words[0] in FAIRSEQ:
        return words[0], words[1:]
    return "", []


def flags(args: List[str]) -> List[str]:
    return [a.split("=", 1)[0] for a in args if re.match(r"^--[a-z]", a)]


@functools.lru_cache(maxsize=None)
def script_help(program: str) -> str:
    if program.startswith("scripts/"):
        argv = ["bash", str(Path(REPO, program)), "--help"]
    else:
        argv = [str(Path(BIN, program)), "--help"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    return proc.stdout + proc.stderr


def fairseq_unknown(program: str, args: List[str]) -> List[str]:
    """The flags of ``args`` that ``program``'s parser (with the task, architecture,
    criterion, optimizer and scheduler ``args`` name) does not know."""
    args = ["1" if "$" in a else a for a in args if a != "..."]  # placeholders
    args = [USER_DIR if a == "veco_plugin" else a for a in args]
    if program == "fairseq-train" and "--arch" not in args:  # elided ("..."): fairseq needs one
        args += ["--arch", "veco_base"]
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            if program == "fairseq-preprocess":  # a plain parser: no components
                _, extra = FAIRSEQ[program]().parse_known_args(args)
            else:
                parser = FAIRSEQ[program]()
                _, extra = options.parse_args_and_arch(parser, args, parse_known=True)
    except SystemExit:
        raise AssertionError(f"{program} {' '.join(args)}: {err.getvalue()}")
    return flags(extra)


def unknown(program: str, args: List[str]) -> List[str]:
    if program in FAIRSEQ:
        return fairseq_unknown(program, args)
    if "--" in args:  # what follows goes to the program the script calls
        args = args[: args.index("--")]
    text = script_help(program)
    return [f for f in flags(args) if not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", text)]


ALL = commands()


def test_the_readmes_show_commands():
    programs = {program for _, program, _ in ALL}
    assert {"fairseq-train", "veco-align", "scripts/prepare-pretraining-data.sh"} <= programs


@pytest.mark.parametrize("where, program, args", ALL, ids=[w for w, _, _ in ALL])
def test_every_flag_shown_exists(where, program, args):
    missing = unknown(program, args)
    assert not missing, f"{program} has no {missing} ({where})"
