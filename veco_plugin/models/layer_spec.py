"""Which layers: the default layer of each use, and layer lists on the command line.

* :data:`DEFAULT_DEPTHS` / :func:`default_layer`: the layer each tool reads by default, at
  the papers' relative depth, so that a 12-layer base model reads the published layer and
  other depths read the same share.
* :func:`parse_layer_list`: ``"18,19,20"`` -> ``[18, 19, 20]`` for every comma-separated
  list of layer indices (``veco-init-nmt --decoder-layers 18,19,20``,
  ``--tie-decoder-to-encoder-layers``), and one range/repetition check; callers put their
  flag in the message.
"""

import re
from typing import Iterable, List, Optional, Sequence

_LAYER = re.compile(r"\.layers\.(\d+)\.")

# use -> layer k of a 12-layer encoder, as a share of its depth
DEFAULT_DEPTHS = {
    "align": 8 / 12,  # word alignment: XLM-Align Table 2, SimAlign (XLM-R base, layer 8)
    "retrieve": 7 / 12,  # sentence retrieval: XTREME's baselines (mid-depth, language-neutral)
    "label": 10 / 12,  # dwa's self-labelling: XLM-Align Table 11
}


def default_layer(use: str, num_layers: int) -> int:
    """The layer ``use`` (a key of :data:`DEFAULT_DEPTHS`) reads in a ``num_layers``-deep
    encoder: its depth share, rounded, at least 1."""
    return max(1, round(num_layers * DEFAULT_DEPTHS[use]))


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
