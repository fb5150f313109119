"""One shard: its segments encoded with the joint sentencepiece model and binarized with
fairseq's mmap builder, into ``DATA/.shard<K>.partial``, renamed ``DATA/shard<K>`` when
complete.

The files are those ``fairseq-preprocess --srcdict DATA/dict.txt`` writes, byte for
byte (tested)::

    shard<K>/dict.txt spm.model
    shard<K>/mono/<lang>/{train,valid}.{bin,idx} dict.txt
    shard<K>/bi/<src>-<tgt>/{train,valid}.<src>-<tgt>.{<src>,<tgt>}.{bin,idx} dict.<lang>.txt

A piece's fairseq id is the one ``Dictionary.index`` gives it (fairseq-preprocess
looks each piece up the same way), taken from a table indexed by sentencepiece id;
every segment ends in ``</s>``. A shard that exists is complete and is not touched; a
failed or killed build leaves only its ``.partial`` directory, which the next build of
that shard removes first.
"""

import itertools
import os
import shutil
import sys
from array import array
from typing import Iterable, List, Optional, Sequence

import numpy as np
from fairseq.data import Dictionary, indexed_dataset

from ..corpora import subwords
from ..corpora.text import chunks
from .plan import CorpusPlan, Plan
from .reading import Segment, corpus_segments

CHUNK = 5000  # segments encoded per call


class VecoChunkBuilder(indexed_dataset.MMapIndexedDatasetBuilder):
    """fairseq's mmap dataset builder, fed many items at once (their ids back to back)
    and keeping their sizes compactly (4 bytes each); ``vocab_size`` None: fairseq's
    dtype for data without a vocabulary (word alignments)."""

    def __init__(self, prefix: str, vocab_size: Optional[int]):
        dtype = indexed_dataset.best_fitting_int_dtype(vocab_size)
        super().__init__(indexed_dataset.data_file_path(prefix), dtype=dtype)
        self.prefix = prefix
        self._sizes = array("i")

    def add_items(self, ids: np.ndarray, sizes: Sequence[int]) -> None:
        """``ids``: (sum(sizes),) the items concatenated."""
        self._data_file.write(ids.astype(self._dtype).tobytes(order="C"))
        self._sizes.extend(sizes)

    def close(self) -> None:
        self.finalize(indexed_dataset.index_file_path(self.prefix))


class VecoShardEncoder:
    """Lines -> fairseq ids (``</s>`` appended), as fairseq-preprocess on the
    space-joined pieces of sentencepiece."""

    def __init__(self, data: str, threads: int = 1):
        self.sp = subwords.load_sentencepiece(os.path.join(data, "spm.model"))
        self.dictionary = Dictionary.load(os.path.join(data, "dict.txt"))
        # sentencepiece id -> fairseq id; one more entry, the end of a segment
        table = [self.dictionary.index(self.sp.id_to_piece(i)) for i in range(len(self.sp))]
        self.table = np.array(table + [self.dictionary.eos()], dtype=np.int64)
        self.threads = threads

    def encode(self, lines: List[str], builder: VecoChunkBuilder) -> None:
        pieces = self.sp.encode(lines, out_type=int, num_threads=self.threads)
        eos = len(self.table) - 1
        for p in pieces:
            p.append(eos)
        sizes = [len(p) for p in pieces]
        flat = np.fromiter(itertools.chain.from_iterable(pieces), np.int64, sum(sizes))
        builder.add_items(self.table[flat], sizes)


def _prefixes(root: str, c: CorpusPlan, split: str) -> List[str]:
    folder = os.path.join(root, c.kind, c.name)
    if c.kind == "mono":
        return [os.path.join(folder, split)]
    return [os.path.join(folder, f"{split}.{c.name}.{lang}") for lang in c.langs]


def _dictionaries(root: str, data: str, c: CorpusPlan) -> None:
    folder = os.path.join(root, c.kind, c.name)
    os.makedirs(folder, exist_ok=True)
    names = ["dict.txt"] if c.kind == "mono" else [f"dict.{lang}.txt" for lang in c.langs]
    for name in names:  # as fairseq-preprocess leaves them
        shutil.copyfile(os.path.join(data, "dict.txt"), os.path.join(folder, name))


def _binarize(
    encoder: VecoShardEncoder, segments: Iterable[Segment], prefixes: List[str], bar
) -> None:
    size = len(encoder.dictionary)
    builders = [VecoChunkBuilder(prefix, size) for prefix in prefixes]
    for chunk in chunks(segments, CHUNK):
        for side, builder in enumerate(builders):
            encoder.encode([segment[side] for segment in chunk], builder)
        bar.update(len(chunk))
    for builder in builders:
        builder.close()


def _progress(plan: Plan, shard: int, position: int):
    from tqdm import tqdm

    return tqdm(
        total=plan.shard_segments(shard),
        desc=f"shard{shard}",
        unit=" segments",
        position=position,
        leave=True,
        disable=not sys.stderr.isatty(),
        dynamic_ncols=True,
    )


def shard_path(data: str, shard: int) -> str:
    return os.path.join(data, f"shard{shard}")


def build_shard(plan: Plan, data: str, shard: int, threads: int = 1, position: int = 0) -> bool:
    """Build ``DATA/shard<shard>`` unless it exists; True if built."""
    final = shard_path(data, shard)
    if os.path.isdir(final):
        return False
    partial = os.path.join(data, f".shard{shard}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    s = plan.settings
    try:
        for name in ("dict.txt", "spm.model"):
            shutil.copyfile(os.path.join(data, name), os.path.join(partial, name))
        encoder = VecoShardEncoder(data, threads)
        with _progress(plan, shard, position) as bar:
            for c in plan.corpora:
                c.check_unchanged()
                _dictionaries(partial, data, c)
                if shard == 0 and s.valid_lines:
                    valid = corpus_segments(c.documents, c.kept, 0, s.valid_lines)
                    _binarize(encoder, valid, _prefixes(partial, c, "valid"), bar)
                start, stop = c.train_range(shard, s.shards, s.valid_lines)
                train = corpus_segments(c.documents, c.kept, start, stop)
                _binarize(encoder, train, _prefixes(partial, c, "train"), bar)
        os.rename(partial, final)
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)
        if os.path.isdir(final):  # another process finished this shard first
            return False
        raise
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return True
