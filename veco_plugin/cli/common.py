"""What the console scripts share: logging set-up, one-line errors, and the flags and
tables of more than one script (no script imports another's module)."""

import logging
import os
import re
import sys
from typing import Callable, Container, Dict, List, Optional, Sequence, Tuple, Type

from ..errors import VecoUserError

SPLIT_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def run_cli(
    prog: str,
    get_parser: Callable,
    main: Callable,
    error: Type[Exception],
    argv: Optional[Sequence[str]] = None,
    status: int = 1,
) -> None:
    """Parse ``argv``, run ``main(args)``; an ``error`` (or any ``VecoUserError``) exits
    with ``prog: error: ...`` on stderr and exit status ``status``."""
    logging.basicConfig(
        format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
        level=os.environ.get("LOGLEVEL", "INFO").upper(),
        stream=sys.stderr,
        force=True,
    )
    args = get_parser().parse_args(argv)
    try:
        main(args)
    except (error, VecoUserError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        sys.exit(status)


def prog_from_argv(argv: Sequence[str], default: str) -> str:
    """``NAME`` of a leading ``--prog NAME`` in ``argv`` (a shell stage that names itself
    in the tool's error lines), else ``default``."""
    return argv[1] if len(argv) > 1 and argv[0] == "--prog" else default


def check_at_least(value: Optional[int], flag: str, least: int = 1) -> None:
    """Refuse ``flag value`` below ``least`` (an unset ``value`` passes)."""
    if value is not None and value < least:
        raise VecoUserError(f"{flag} {value}: must be at least {least}")


def check_score_outputs(args) -> None:
    """A scorer's ``--json`` file and ``--predictions`` folder, checked before any work."""
    from ..outputs import check_output_dir, check_output_file

    if args.json:
        check_output_file(args.json, "--json", "scores.json")
    if args.predictions:
        check_output_dir(args.predictions, "--predictions")


def write_scores(path: Optional[str], results) -> None:
    """A scorer's ``results`` as JSON at ``--json`` ``path`` (when given), atomically."""
    import json

    from ..outputs import write_text

    if path:
        write_text(path, json.dumps(results, indent=2) + "\n")


def parse_checkpoints(values: Sequence[str]) -> List[Tuple[str, str]]:
    """``--checkpoint NAME=PATH`` values as ``[(NAME, PATH), ...]``: each PATH a file, each
    NAME a column of the scorer's table, given once."""
    out: List[Tuple[str, str]] = []
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise VecoUserError(f"--checkpoint {value}: expected NAME=PATH")
        if os.path.isdir(path):
            raise VecoUserError(
                f"--checkpoint {value} is a directory: name the checkpoint file, e.g. "
                f"{name}={os.path.join(path, 'checkpoint_best.pt')}"
            )
        if not os.path.isfile(path):
            raise VecoUserError(f"--checkpoint {value}: no such file {path}")
        if name in [n for n, _ in out] or name.endswith("+tr"):
            raise VecoUserError(
                f"--checkpoint {value}: the column {name} is taken (each NAME once; a plug-in "
                "checkpoint NAME also gets NAME+tr): give each checkpoint its own NAME"
            )
        out.append((name, path))
    return out


def check_split_name(value: str, name: str, splits: Container[str], flag: str = "--split"):
    """A split's name is a file name under --output, and given once."""
    if not SPLIT_NAME.fullmatch(name):
        raise VecoUserError(
            f"{flag} {value}: the name {name!r} becomes a file name under --output: use "
            "letters, digits, '_', '-' and '.' (e.g. train, valid, test_de)"
        )
    if name in splits:
        raise VecoUserError(f"{flag} {name}= is given twice: give each split once")


def parse_split_files(values: Sequence[str], flag: str = "--split") -> Dict[str, List[str]]:
    """``FLAG NAME=FILE[,FILE...]`` values as ``{NAME: [FILE, ...]}``."""
    splits: Dict[str, List[str]] = {}
    for value in values:
        name, sep, files = value.partition("=")
        paths = files.split(",")
        if not sep or not name or "" in paths:
            raise VecoUserError(f"{flag} {value}: expected NAME=FILE[,FILE...]")
        check_split_name(value, name, splits, flag)
        splits[name] = paths
    return splits


def single_files(values: Sequence[str], flag: str) -> Dict[str, str]:
    """``FLAG NAME=FILE.json`` values as ``{NAME: FILE.json}``."""
    out = {}
    for name, files in parse_split_files(values, flag).items():
        if len(files) != 1:
            raise VecoUserError(
                f"{flag} {name}={','.join(files)}: one SQuAD JSON file per name (merge the "
                "files' 'data' lists into one)"
            )
        out[name] = files[0]
    return out


def metric_table(results: Dict[str, Dict], metric: str, columns: Sequence[str]) -> str:
    """A scorer's markdown table: a row per checkpoint ``results[NAME][metric][column]``."""
    lines = [f"| {metric} | " + " | ".join(columns) + " |"]
    lines.append("|---|" + "---:|" * len(columns))
    for name, scores in results.items():
        lines.append(
            f"| {name} | " + " | ".join(f"{scores[metric][c]:.1f}" for c in columns) + " |"
        )
    return "\n".join(lines)
