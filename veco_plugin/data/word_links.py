"""External word alignments of a bitext -> links between the pieces of a pair (WEAM §2.2).

WEAM's exchange matrix A (eq. 5) links the words of an alignment set
d(s, t) = {(i_1, j_1), ..., (i_n, j_n)} computed by an external aligner (FastAlign,
eflomal) on the raw, whitespace-separated words. The bitext itself is binarized from
sentencepiece pieces, so word ``k`` of a line is the ``k``-th group of pieces, a group
starting at each piece that begins with "▁" (U+2581); the first piece of a line always
starts a word (``<unk>`` and the other special symbols never do).

On disk the alignments are what ``fairseq-preprocess --align-suffix align`` writes from
a Pharaoh file ``{trainpref}.align`` (one line ``i-j i-j ...`` per bitext line, 0-based
word indices, an empty line for a pair without links)::

    DATA/bi/<src>-<tgt>/<split>.align.<src>-<tgt>.{bin,idx}

one flat int tensor ``[i_0, j_0, i_1, j_1, ...]`` per line (``fairseq.utils.parse_alignment``).

In the pair layout of :class:`~veco_plugin.data.pair_dataset.VecoPairDataset` a side is
``<s> p_0 .. p_{k-1} </s>``: piece ``p`` sits at position ``p + 1``. Every piece of source
word ``a`` is linked to every piece of target word ``b`` for each word link ``(a, b)``.
"""

import os
from typing import Optional, Tuple

import numpy as np
import torch
from fairseq.data import Dictionary, data_utils, indexed_dataset

from ..errors import VecoUserError

WORD_START = "\u2581"  # sentencepiece's "▁": the piece begins a whitespace-separated word

__all__ = [
    "VecoWordLinks",
    "align_with_eflomal",
    "alignment_prefix",
    "load_word_links",
    "piece_links",
    "word_index",
    "word_starts",
]


def word_starts(dictionary: Dictionary) -> np.ndarray:
    """(V,) bool: symbol ``v`` of ``dictionary`` begins a word (starts with "▁")."""
    return np.array([sym.startswith(WORD_START) for sym in dictionary.symbols], dtype=bool)


def word_index(pieces: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The word number of each piece of one line.

    Args:
        pieces: (P,) token ids of the line's pieces (no ``<s>``, no ``</s>``)
        starts: (V,) bool, see :func:`word_starts`
    Returns:
        (P,) int64, 0 for the first piece, +1 at each piece that starts a word.
    """
    flags = starts[pieces]
    if len(flags):
        flags[0] = True  # the first real piece always starts a word
    return np.cumsum(flags, dtype=np.int64) - 1


def piece_links(
    word_links: np.ndarray,
    x_words: np.ndarray,
    y_words: np.ndarray,
    x_kept: int,
    y_kept: int,
) -> Tuple[np.ndarray, int]:
    """One line's word links -> links between positions of the pair layout.

    Args:
        word_links: (n, 2) int, word links ``(a, b)``: source word ``a``, target word ``b``
        x_words, y_words: (P,), (Q,) word number of each piece of the untruncated sides
            (:func:`word_index`)
        x_kept, y_kept: pieces of each side left after truncation (``|x| - 2``)
    Returns:
        ``links`` (m, 2) int64, position pairs ``(i, j)`` (``i`` in x, ``j`` in y, both
        counted with ``<s>`` at 0, so piece ``p`` is at ``p + 1``), sorted by i then j,
        each once; and ``dropped``, the piece links that fell beyond a truncated side.
    """
    word_links = np.asarray(word_links, dtype=np.int64).reshape(-1, 2)
    if len(word_links) == 0 or len(x_words) == 0 or len(y_words) == 0:
        return np.zeros((0, 2), dtype=np.int64), 0
    # (n, P) and (n, Q): piece p belongs to the source / target word of link k
    in_x = (x_words[None, :] == word_links[:, :1]).astype(np.int64)
    in_y = (y_words[None, :] == word_links[:, 1:]).astype(np.int64)
    linked = (in_x.T @ in_y) > 0  # (P, Q): some word link joins the two pieces' words
    kept = linked[:x_kept, :y_kept]
    dropped = int(linked.sum() - kept.sum())
    return np.argwhere(kept).astype(np.int64) + 1, dropped


def alignment_prefix(directory: str, split: str, src: str, tgt: str) -> str:
    """Where ``fairseq-preprocess --align-suffix`` writes ``split``'s alignments (no suffix)."""
    return os.path.join(directory, f"{split}.align.{src}-{tgt}")


def _flat(dataset, prefix: str) -> np.ndarray:
    """All lines of an indexed dataset, concatenated in line order (one read for mmap)."""
    if isinstance(dataset, indexed_dataset.MMapIndexedDataset):
        dtype = indexed_dataset.MMapIndexedDataset.Index(
            indexed_dataset.index_file_path(prefix)
        ).dtype
        total = int(np.asarray(dataset.sizes, dtype=np.int64).sum())
        if total == 0:
            return np.zeros(0, dtype=np.int64)
        data = np.memmap(indexed_dataset.data_file_path(prefix), dtype=dtype, mode="r")
        return np.asarray(data[:total], dtype=np.int64)
    if len(dataset) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate([np.asarray(dataset[i], dtype=np.int64) for i in range(len(dataset))])


def _words_per_line(tokens: np.ndarray, sizes: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """(N,) words of each binarized line (pieces then ``</s>``), given the flat tokens."""
    ends = np.cumsum(sizes)
    begins = ends - sizes
    flags = starts[tokens] if len(tokens) else np.zeros(0, dtype=bool)
    flags[begins[sizes > 1]] = True  # the first piece of a non-empty line
    flags[ends[sizes > 0] - 1] = False  # </s>
    total = np.concatenate([[0], np.cumsum(flags, dtype=np.int64)])
    return total[ends] - total[begins]


class VecoWordLinks:
    """The word alignments of one bitext split, line-aligned with its two sides.

    ``alignments``: the indexed dataset of flat ``[i_0, j_0, ...]`` lines; ``starts``:
    see :func:`word_starts`. Built by :func:`load_word_links`, which checks them.
    """

    def __init__(self, alignments, starts: np.ndarray, path: str):
        self.alignments, self.starts, self.path = alignments, starts, path

    def __len__(self) -> int:
        return len(self.alignments)

    def words(self, line: int) -> np.ndarray:
        """(n, 2) int64 word links ``(a, b)`` of ``line`` (0-based)."""
        return np.asarray(self.alignments[line], dtype=np.int64).reshape(-1, 2)

    def pieces(
        self, line: int, x: torch.Tensor, y: torch.Tensor, x_len: int, y_len: int
    ) -> Tuple[np.ndarray, int]:
        """:func:`piece_links` of ``line`` for the binarized sides ``x``, ``y`` (pieces
        then ``</s>``) truncated to ``x_len``, ``y_len`` tokens with ``<s>`` and ``</s>``."""
        x_words = word_index(x.numpy()[:-1], self.starts)
        y_words = word_index(y.numpy()[:-1], self.starts)
        return piece_links(self.words(line), x_words, y_words, x_len - 2, y_len - 2)


def load_word_links(
    directory: str, split: str, src: str, tgt: str, dictionary: Dictionary, sides
) -> Optional[VecoWordLinks]:
    """The alignments of ``directory/split.align.src-tgt`` when they exist, else None.

    ``sides``: the loaded (source, target) datasets of the same split. A different
    number of lines, or a link to a word a line does not have, is a
    :class:`VecoUserError` naming the file (and the 1-based line and link).
    """
    prefix = alignment_prefix(directory, split, src, tgt)
    alignments = data_utils.load_indexed_dataset(prefix, None)
    if alignments is None:
        return None
    path = indexed_dataset.data_file_path(prefix)
    if len(alignments) != len(sides[0]):
        raise VecoUserError(
            f"{path} has {len(alignments)} lines of word alignments but the bitext "
            f"{directory}/{split}.{src}-{tgt}.{{{src},{tgt}}} has {len(sides[0])}: the Pharaoh "
            "file must have one line per sentence pair (empty for a pair without links); "
            f"re-align the text and re-run fairseq-preprocess --align-suffix into {directory}"
        )
    starts = word_starts(dictionary)
    links = _flat(alignments, prefix)
    pairs_per_line = np.asarray(alignments.sizes, dtype=np.int64) // 2
    line = np.repeat(np.arange(len(alignments)), pairs_per_line)  # (L,) line of each link
    bad = np.zeros(len(line), dtype=bool)
    for side, (dataset, lang) in enumerate(zip(sides, (src, tgt))):
        side_prefix = os.path.join(directory, f"{split}.{src}-{tgt}.{lang}")
        sizes = np.asarray(dataset.sizes, dtype=np.int64)
        words = _words_per_line(_flat(dataset, side_prefix), sizes, starts)
        index = links[side::2]
        bad |= (index < 0) | (index >= words[line])
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        n = int(line[k])
        counts = [
            int(_words_per_line(np.asarray(d[n], dtype=np.int64), d.sizes[n : n + 1], starts)[0])
            for d in sides
        ]
        raise VecoUserError(
            f"{path} line {n + 1}: link {links[2 * k]}-{links[2 * k + 1]} is out of range: "
            f"the pair has {counts[0]} {src} and {counts[1]} {tgt} words (0-based indices "
            "of whitespace-separated words); align the same text that was encoded and "
            "re-run fairseq-preprocess --align-suffix"
        )
    return VecoWordLinks(alignments, starts, path)


def _symmetric(forward: str, reverse: str) -> str:
    """Intersection of the two directions of one Pharaoh line (both as source-target)."""
    both = set(forward.split()) & set(reverse.split())
    pairs = sorted(tuple(int(v) for v in link.split("-")) for link in both)
    return " ".join(f"{i}-{j}" for i, j in pairs)


def align_with_eflomal(src: str, tgt: str, out: str) -> None:
    """Word-align the line-aligned text files ``src`` and ``tgt`` with eflomal and
    write ``out``: one Pharaoh line per pair, the intersection of both directions (high
    precision: WEAM exchanges the representations of every link)."""
    try:
        import eflomal
    except ImportError as exc:
        raise VecoUserError(
            "--align-with eflomal: the eflomal package is not installed (pip install eflomal)"
        ) from exc
    with open(src, encoding="utf-8") as f:
        src_lines = f.read().splitlines()
    with open(tgt, encoding="utf-8") as f:
        tgt_lines = f.read().splitlines()
    if len(src_lines) != len(tgt_lines):
        raise VecoUserError(f"{src} and {tgt} have {len(src_lines)} and {len(tgt_lines)} lines")
    fwd, rev = out + ".fwd", out + ".rev"
    try:
        eflomal.Aligner().align(
            src_lines, tgt_lines, links_filename_fwd=fwd, links_filename_rev=rev
        )
        with open(fwd, encoding="utf-8") as f, open(rev, encoding="utf-8") as r:
            lines = [_symmetric(a, b) for a, b in zip(f.read().splitlines(), r.read().splitlines())]
    finally:
        for name in (fwd, rev):
            if os.path.exists(name):
                os.remove(name)
    if len(lines) != len(src_lines):
        raise VecoUserError(
            f"eflomal wrote {len(lines)} alignment lines for {len(src_lines)} pairs"
        )
    with open(out, "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)
