"""What the benchmark scripts share: model-shape flags, the toy vocabulary, the JSON they
write. (The unit tests build their toy models on the same vocabulary.)"""

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


def toy_dictionary(n_words: int = 50) -> Any:
    """fairseq's ``Dictionary`` of the four specials, ``w0`` ... ``w{n_words - 1}`` and
    ``<mask>`` last (the pre-training layout)."""
    from fairseq.data import Dictionary

    d = Dictionary()
    for i in range(n_words):
        d.add_symbol(f"w{i}")
    d.add_symbol("<mask>")
    return d


def write_json(path: str, result: Dict[str, Any]) -> None:
    """``result`` as indented, key-sorted JSON at ``path`` (folders made as needed)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
