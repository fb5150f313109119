"""Word-alignment self-labelling of XLM-Align (§3.1), shared by the dwa criterion and the aligner.

``similarity`` (eq. 1) and ``sinkhorn`` (eqs. 3-6) give the transport plan A*; ``argmax_links``
(eq. 7) and ``itermax`` (eqs. 8-9) filter it into links; ``self_label`` chains them; ``word_links``
and ``pharaoh`` turn subword links into word alignments.
"""

from .filtering import argmax_links, itermax, itermax_step, self_label
from .sinkhorn import similarity, sinkhorn
from .words import pharaoh, word_links

__all__ = [
    "argmax_links",
    "itermax",
    "itermax_step",
    "pharaoh",
    "self_label",
    "similarity",
    "sinkhorn",
    "word_links",
]
