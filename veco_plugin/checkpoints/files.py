"""The checkpoint a console script writes: ``--output`` checked before any work, written
atomically (``<output>.tmp`` then rename), and no ``.tmp`` left when writing fails."""

import os
from typing import Any, Dict

from ..outputs import check_output_file


def check_output(path: str) -> None:
    """``--output`` names a file that can be created: not a directory, and not under a
    path that is a file."""
    check_output_file(path, "--output", "checkpoint.pt")


def save_checkpoint(state: Dict[str, Any], path: str) -> None:
    """fairseq's atomic ``torch_persistent_save``; a failed write removes its ``.tmp``."""
    from fairseq.checkpoint_utils import torch_persistent_save

    check_output(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    try:
        torch_persistent_save(state, path)
    except BaseException:
        if os.path.isfile(f"{path}.tmp"):
            os.remove(f"{path}.tmp")
        raise
