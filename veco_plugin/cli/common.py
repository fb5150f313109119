"""What the console scripts share: logging set-up, one-line errors, checkpoint configs."""

import logging
import os
import sys
from typing import Any, Callable, Dict, Optional, Sequence, Type

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


def checkpoint_model_cfg(state: Dict[str, Any]) -> Any:
    """The model config of a fairseq checkpoint: ``cfg.model``, else the legacy ``args``."""
    cfg = state.get("cfg")
    if cfg is not None and cfg.get("model") is not None:
        return cfg["model"]
    return state.get("args")


def cfg_value(cfg: Any, key: str, default: Any = None) -> Any:
    """``cfg.key`` of an argparse Namespace, dict or omegaconf config; ``default`` when
    ``cfg`` is None or the value is absent or None."""
    if cfg is None:
        return default
    try:
        value = getattr(cfg, key, None)
    except Exception:  # omegaconf struct mode raises on unknown keys
        value = None
    if value is None and hasattr(cfg, "get"):
        try:
            value = cfg.get(key)
        except Exception:
            value = None
    return default if value is None else value
