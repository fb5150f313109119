"""Attention inside a segment: the masks of packed rows (``veco_plugin.data.packing``)."""

import torch
from torch import Tensor


def segment_mask(query_segments: Tensor, key_segments: Tensor, dtype: torch.dtype) -> Tensor:
    """An additive attention mask letting each query see only the keys of its own
    segment.

    Args:
        query_segments: (N, T) segment numbers of the queries' rows, 0 at pad
        key_segments: (N, S) those of the keys' rows (the same rows for self-attention;
            the partner rows for VECO's cross-attention, whose segments are numbered
            as their partners')
        dtype: the attention's
    Returns:
        (N, 1, T, S): 0 where a query and a key share a segment, ``-inf`` elsewhere; a
        pad query sees every key (its output is never read, and no row is all
        ``-inf``, which would make NaN)
    """
    seen = query_segments.unsqueeze(2).eq(key_segments.unsqueeze(1))
    seen = seen | query_segments.eq(0).unsqueeze(2)
    blocked = torch.zeros(seen.shape, dtype=dtype, device=seen.device)
    return blocked.masked_fill(~seen, float("-inf")).unsqueeze(1)
