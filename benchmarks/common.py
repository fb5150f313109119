"""What the benchmark scripts share: model-shape flags and the JSON they write."""

import json
import os
from typing import Any, Dict, List


def encoder_size_flags(a: Any) -> List[str]:
    """fairseq flags for an encoder of ``a.layers`` x ``a.dim`` (FFN ``a.ffn``, ``a.heads``)."""
    return [
        "--encoder-layers",
        str(a.layers),
        "--encoder-embed-dim",
        str(a.dim),
        "--encoder-ffn-embed-dim",
        str(a.ffn),
        "--encoder-attention-heads",
        str(a.heads),
    ]


def write_json(path: str, result: Dict[str, Any]) -> None:
    """``result`` as indented, key-sorted JSON at ``path`` (folders made as needed)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
