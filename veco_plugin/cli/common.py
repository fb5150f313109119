"""What every console script shares: logging set-up and one-line errors."""

import logging
import os
import sys
from typing import Callable, Optional, Sequence, Type


def run_cli(
    prog: str,
    get_parser: Callable,
    main: Callable,
    error: Type[Exception],
    argv: Optional[Sequence[str]] = None,
) -> None:
    """Parse ``argv``, run ``main(args)``; an ``error`` exits with ``prog: error: ...``."""
    logging.basicConfig(
        format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
        level=os.environ.get("LOGLEVEL", "INFO").upper(),
        stream=sys.stderr,
        force=True,
    )
    args = get_parser().parse_args(argv)
    try:
        main(args)
    except error as exc:
        sys.exit(f"{prog}: error: {exc}")
