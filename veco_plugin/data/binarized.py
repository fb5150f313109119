"""Binarized data on disk: which splits a directory holds, and whether each ``.bin``
holds what its ``.idx`` says.

A ``.bin`` shorter than its index (a copy cut short, a full disk) loads without
complaint in fairseq and fails mid-epoch, in a data-loader worker, the first time a
missing example is drawn. Importing the plugin wraps fairseq's
``indexed_dataset.make_dataset`` (every task loads ``.bin``/``.idx`` pairs through it)
to compare the ``.bin`` size with the bytes the index points to when the data is
loaded, before the first batch.
"""

import functools
import os
import struct
from typing import List, Optional

from fairseq.data import indexed_dataset

from ..errors import VecoUserError
from ..patching import wrap_once

FIX = "copy it again or re-run fairseq-preprocess"
INDEXED = ("mmap", "lazy", "cached")  # formats with a binary .idx (read on load)


def splits_in(directory: str) -> List[str]:
    """Split names of the data files in ``directory`` (``train``, ``valid``, ...;
    ``train.en-de.en.idx`` counts as ``train``); dictionaries and logs are not splits."""
    if not os.path.isdir(directory):
        return []
    return sorted(
        {
            name.split(".", 1)[0]
            for name in os.listdir(directory)
            if not name.startswith("dict.") and name != "preprocess.log"
        }
    )


def missing_split(flag: str, split: str, directory: str, fix: str) -> VecoUserError:
    """The error for ``flag split`` naming data that ``directory`` does not hold."""
    found = ", ".join(splits_in(directory)) or "no split"
    return VecoUserError(
        f"{flag} {split}: {directory} has no {split} data (it holds {found}): "
        f"pass one of those, or binarize {split} into it with {fix}"
    )


def indexed_bytes(dataset, prefix: str) -> Optional[int]:
    """Bytes of ``prefix.bin`` that the index of ``dataset`` points to; None for formats
    without a ``.bin`` (raw text, fasta)."""
    if isinstance(dataset, indexed_dataset.MMapIndexedDataset):
        index = indexed_dataset.MMapIndexedDataset.Index(indexed_dataset.index_file_path(prefix))
        if len(index) == 0:
            return 0
        pointer, size = index[len(index) - 1]
        return int(pointer) + int(size) * index.dtype().itemsize
    if isinstance(dataset, indexed_dataset.IndexedDataset):  # lazy, cached
        return int(dataset.data_offsets[-1]) * int(dataset.element_size)
    return None


def check_complete(dataset, prefix: str) -> None:
    """Refuse a ``prefix.bin`` whose size is not what ``prefix.idx`` describes."""
    expected = indexed_bytes(dataset, prefix)
    path = indexed_dataset.data_file_path(prefix)
    if expected is None or not os.path.isfile(path):
        return
    actual = os.path.getsize(path)
    if actual < expected:
        raise VecoUserError(
            f"{path} is truncated: {actual} bytes, but {prefix}.idx indexes {expected} "
            f"({len(dataset)} examples): {FIX}"
        )
    if actual > expected:
        raise VecoUserError(
            f"{path} has {actual} bytes but {prefix}.idx indexes {expected}: the two files "
            f"are not from one fairseq-preprocess run; {FIX}"
        )


def _checked(make_dataset):
    @functools.wraps(make_dataset)
    def wrapper(path, impl, *args, **kwargs):
        try:
            dataset = make_dataset(path, impl, *args, **kwargs)
        except (AssertionError, ValueError, struct.error) as exc:
            if impl not in INDEXED:
                raise
            raise VecoUserError(
                f"{indexed_dataset.index_file_path(path)}: not a readable fairseq index "
                f"({exc or type(exc).__name__}): {FIX}"
            ) from None
        if dataset is not None:
            check_complete(dataset, path)
        return dataset

    return wrapper


def install() -> None:
    """Check every ``.bin`` against its index when it is loaded; idempotent."""
    wrap_once(indexed_dataset, "make_dataset", _checked, "checked")
