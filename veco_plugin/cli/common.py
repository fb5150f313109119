"""What the console scripts share: logging set-up and one-line errors."""

import logging
import os
import sys
from typing import Callable, Optional, Sequence, Type

from ..errors import VecoUserError


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
