"""Subword links to word links, and Pharaoh output (XLM-Align, Chi et al., 2021, §4.3).

"If two subwords are aligned, the words they belong to are also aligned": with one-hot maps
P_src (B, n, Wn) and P_tgt (B, m, Wm) from pieces to words,

    W = P_src^T L P_tgt > 0

for the (B, n, m) subword links L (eqs. 7-9). Pieces that belong to no word (padding, <s>, </s>)
carry a word index outside [0, W) and drop out of the one-hot maps.
"""

import torch
from torch import Tensor

__all__ = ["word_links", "pharaoh"]


def _one_hot(words: Tensor, n_words: int) -> Tensor:
    """(B, n) long word index per piece -> (B, n, n_words) float32; out-of-range rows are 0."""
    ids = torch.arange(n_words, device=words.device)
    return (words[:, :, None] == ids).float()


def word_links(
    links: Tensor,
    src_words: Tensor,
    tgt_words: Tensor,
    n_src_words: int,
    n_tgt_words: int,
) -> Tensor:
    """Lift subword links to word links: two words align if any of their pieces do.

    Args:
        links: (B, n, m) bool links between source and target pieces.
        src_words: (B, n) long word index of each source piece; any value outside
            ``[0, n_src_words)`` (e.g. -1) marks a piece that belongs to no word.
        tgt_words: (B, m) long word index of each target piece, likewise.
        n_src_words: Wn, the number of source words (the largest sentence in the batch).
        n_tgt_words: Wm, the number of target words.

    Returns:
        (B, Wn, Wm) bool word links.
    """
    p_src = _one_hot(src_words, n_src_words)  # (B, n, Wn)
    p_tgt = _one_hot(tgt_words, n_tgt_words)  # (B, m, Wm)
    # (B, Wn, n) x (B, n, m) x (B, m, Wm): counts of linked piece pairs, exact in float32.
    counts = torch.bmm(torch.bmm(p_src.transpose(1, 2), links.float()), p_tgt)
    return counts > 0


def pharaoh(word_links_2d: Tensor) -> str:
    """One (Wn, Wm) bool matrix -> a Pharaoh line ``"0-0 1-2"`` (0-based, sorted by i then j)."""
    pairs = word_links_2d.nonzero().tolist()  # row-major, hence sorted by i then j
    return " ".join(f"{i}-{j}" for i, j in sorted(pairs))
