"""Pieces as text -> the files ``fairseq-preprocess --srcdict`` writes, byte for byte
(tested), in the calling process: the binarizing half of
``scripts/prepare-pretraining-data.sh`` (``veco-spm binarize``).

fairseq-preprocess is a Python loop over lines and pieces, and each call pays fairseq's
import (about 8 s here); the script made three calls. Here a line is split as fairseq
splits it (``fairseq.tokenizer.tokenize_line``), each piece takes the id
``Dictionary.index`` gives it (``<unk>`` when absent), ``</s>`` ends every line, a
Pharaoh alignment line is parsed by fairseq's own ``utils.parse_alignment``, and the
dictionaries are saved by ``Dictionary.save``, as fairseq-preprocess saves them. The layout::

    TEXT/mono.spm.<lang>, TEXT/valid.spm.<lang>   -> DATA/mono/<lang>/{train,valid}
    TEXT/{train,valid}.spm.{<src>,<tgt>}          -> DATA/bi/<src>-<tgt>/<split>.<src>-<tgt>.<lang>
    TEXT/{train,valid}.spm.<suffix> (if there)    -> DATA/bi/<src>-<tgt>/<split>.align.<src>-<tgt>

Each destination is written to ``DEST.partial`` and renamed when complete: a killed run
leaves no half-written dataset under the final name.
"""

import os
import shutil
from typing import Iterable, List, Optional, Sequence, Tuple

import numpy as np
from fairseq import utils
from fairseq.data import Dictionary
from fairseq.tokenizer import tokenize_line

from ..corpora.text import chunks
from ..errors import VecoUserError
from .shards import VecoChunkBuilder

CHUNK = 10000  # lines per write


def _lines(path: str) -> Iterable[str]:
    """The lines of ``path`` as fairseq-preprocess reads them (UTF-8, universal newlines)."""
    with open(path, encoding="utf-8") as f:
        yield from f


def binarize_pieces(path: str, prefix: str, dictionary: Dictionary) -> None:
    """``path`` (space-joined pieces, a segment a line) -> ``prefix.{bin,idx}``."""
    builder = VecoChunkBuilder(prefix, len(dictionary))
    ids, unk, eos = dictionary.indices, dictionary.unk(), dictionary.eos()
    for chunk in chunks(_lines(path), CHUNK):
        lines = [[ids.get(piece, unk) for piece in tokenize_line(line)] for line in chunk]
        for line in lines:
            line.append(eos)
        sizes = [len(line) for line in lines]
        builder.add_items(np.fromiter((i for line in lines for i in line), np.int64), sizes)
    builder.close()


def binarize_alignments(path: str, prefix: str) -> None:
    """``path`` (Pharaoh ``i-j`` lines) -> ``prefix.{bin,idx}``, one flat
    ``[i_0, j_0, i_1, j_1, ...]`` item a line."""
    builder = VecoChunkBuilder(prefix, None)  # fairseq binarizes alignments with no vocabulary
    count = 0
    for chunk in chunks(_lines(path), CHUNK):
        items: List[np.ndarray] = []
        for lineno, line in enumerate(chunk, start=count + 1):
            try:
                items.append(utils.parse_alignment(line).numpy())
            except ValueError:
                raise VecoUserError(
                    f"{path}, line {lineno}: {line.strip()[:60]!r} is not a Pharaoh line "
                    "(i-j pairs of 0-based word positions, space-separated): fix or re-align it"
                ) from None
        flat = np.concatenate(items) if items else np.zeros(0, np.int64)
        builder.add_items(flat, [len(item) for item in items])
        count += len(items)
    builder.close()


def _into(dest: str, write) -> None:
    """Run ``write(folder)`` into ``dest.partial``, then replace ``dest`` with it."""
    partial = f"{dest.rstrip(os.sep)}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    try:
        write(partial)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(partial, dest)


def binarize_mono(dictionary: Dictionary, train: str, valid: str, dest: str) -> None:
    """``fairseq-preprocess --only-source --srcdict D --trainpref T --validpref V``."""

    def write(folder: str) -> None:
        dictionary.save(os.path.join(folder, "dict.txt"))
        for split, path in (("train", train), ("valid", valid)):
            binarize_pieces(path, os.path.join(folder, split), dictionary)

    _into(dest, write)


def binarize_bitext(
    dictionary: Dictionary,
    prefixes: Sequence[Tuple[str, str]],
    langs: Tuple[str, str],
    dest: str,
    align_suffix: Optional[str] = None,
) -> None:
    """``fairseq-preprocess -s S -t T --srcdict D --tgtdict D`` over ``prefixes``
    (``(split, text prefix)``: ``PREFIX.S``, ``PREFIX.T``), with ``--align-suffix``'s
    alignments of each split whose ``PREFIX.SUFFIX`` exists."""
    pair = f"{langs[0]}-{langs[1]}"

    def write(folder: str) -> None:
        for lang in langs:
            dictionary.save(os.path.join(folder, f"dict.{lang}.txt"))
        for split, prefix in prefixes:
            for lang in langs:
                out = os.path.join(folder, f"{split}.{pair}.{lang}")
                binarize_pieces(f"{prefix}.{lang}", out, dictionary)
            if align_suffix and os.path.exists(f"{prefix}.{align_suffix}"):
                out = os.path.join(folder, f"{split}.align.{pair}")
                binarize_alignments(f"{prefix}.{align_suffix}", out)

    _into(dest, write)
