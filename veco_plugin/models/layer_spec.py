"""Layer lists on the command line: ``"18,19,20"`` -> ``[18, 19, 20]``, checked against a stack.

One parser for every comma-separated list of layer indices (``veco-init-nmt
--decoder-layers 18,19,20``, ``--tie-decoder-to-encoder-layers``) and one range/repetition
check; callers put their flag in the message.
"""

import re
from typing import Iterable, List, Optional, Sequence

_LAYER = re.compile(r"\.layers\.(\d+)\.")


def parse_layer_list(text: str) -> List[int]:
    """``"18, 19,20"`` -> ``[18, 19, 20]``, blank items skipped (``""`` -> ``[]``).

    Raises:
        ValueError: an item is not an integer (the caller names its flag).
    """
    return [int(item) for item in text.split(",") if item.strip()]


def layer_list_problem(
    layers: Sequence[int], num_layers: int, owner: str, unique: bool = True
) -> Optional[str]:
    """Why ``layers`` cannot index a stack of ``num_layers`` (``owner``, e.g. "the
    encoder"), or None: the first index out of range, else (``unique``) a repeat."""
    for i in layers:
        if not 0 <= i < num_layers:
            return f"layer {i} out of range ({owner} has {num_layers} layers, 0-{num_layers - 1})"
    if unique and len(set(layers)) != len(layers):
        return "a layer appears twice"
    return None


def count_layers(keys: Iterable[str], prefix: str) -> int:
    """Number of ``{prefix}.layers.N.`` blocks among state-dict ``keys`` (max N + 1)."""
    found = {int(m.group(1)) for k in keys if k.startswith(prefix) for m in [_LAYER.search(k)] if m}
    return max(found) + 1 if found else 0
