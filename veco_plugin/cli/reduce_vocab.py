"""Reduce the pre-trained vocabulary to the types a fine-tuning corpus uses.

::

    veco-reduce-vocab --dict xlmr.large/dict.txt \\
        --data wmt14/train.spm.en wmt14/train.spm.de wmt14/valid.spm.* \\
        --output-dir wmt14/vocab
    # -> wmt14/vocab/dict.txt        reduced dictionary (binarize with it)
    #    wmt14/vocab/vocab_map.tsv   new_id <TAB> old_id <TAB> symbol, one line per row
    veco-init-nmt --pretrained veco.pt --vocab-map wmt14/vocab/vocab_map.tsv --output init.pt
    fairseq-preprocess -s en -t de --joined-dictionary --srcdict wmt14/vocab/dict.txt ...

The data files are already subword-encoded text; tokens are whitespace-separated (as
fairseq-preprocess splits them). Kept rows, in their pre-trained order: the special
symbols, every dictionary type occurring at least ``--min-count`` times in the data,
and ``<mask>`` last, where the ``translation_from_pretrained_veco`` task appends it.
``vocab_map.tsv`` lists every row of the reduced embedding matrix (specials and
``<mask>`` included) with the pre-trained row it copies, so a token's embedding in
the resized model equals its pre-trained embedding exactly. Data tokens that are
not in the pre-trained dictionary map to ``<unk>`` before and after; their count is
reported. Counts in the written ``dict.txt`` are the data counts.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import tempfile
from collections import Counter
from typing import Any, Dict, List, Optional, Sequence

from ..checkpoints.vocab_map import (
    DICT_NAME,
    MAP_NAME,
    ReduceVocabError,
    count_tokens,
    select_rows,
    write_outputs,
)
from ..corpora.text import input_file, read_lines, strict
from ..data.dictionary import MASK, load_dictionary_with_mask
from ..outputs import check_output_dir
from .common import run_cli

logger = logging.getLogger("veco_plugin.cli.reduce_vocab")


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        epilog=(
            "example: veco-reduce-vocab --dict PRE/dict.txt --data train.spm.en "
            "train.spm.de --output-dir reduced"
        ),
        prog="veco-reduce-vocab",
        description="Keep only the pre-trained dictionary rows that the fine-tuning data "
        "uses; writes dict.txt and vocab_map.tsv for veco-init-nmt --vocab-map.",
    )
    parser.add_argument(
        "--dict",
        required=True,
        metavar="FILE",
        help="the pre-training dict.txt (<mask> is appended as in pre-training)",
    )
    parser.add_argument(
        "--data",
        required=True,
        nargs="+",
        metavar="FILE",
        help="subword-encoded fine-tuning text files (all sides and splits)",
    )
    parser.add_argument(
        "--output-dir",
        required=True,
        metavar="DIR",
        help="where to write dict.txt and vocab_map.tsv",
    )
    parser.add_argument(
        "--min-count",
        type=int,
        default=1,
        metavar="N",
        help="keep types occurring at least N times in --data (default 1)",
    )
    return parser


def check_paths(args: argparse.Namespace) -> None:
    """Every input a file, ``--output-dir`` a directory that can be made and not the one
    holding ``--dict`` (its dict.txt would be replaced): before any reading."""
    input_file(args.dict, "--dict", ReduceVocabError)
    for path in args.data:
        input_file(path, "--data", ReduceVocabError)
    check_output_dir(args.output_dir, "--output-dir")
    written = os.path.join(args.output_dir, DICT_NAME)
    if os.path.exists(written) and os.path.samefile(written, args.dict):
        raise ReduceVocabError(
            f"--output-dir {args.output_dir} would overwrite --dict {args.dict} with the "
            "reduced dictionary: name another directory"
        )


def distinct_files(paths: List[str]) -> List[str]:
    """``paths`` without a second naming of a file (a glob overlapping a name, a link),
    each dropped with a warning: the counts are of the data, not of how it was named."""
    seen: Dict[str, str] = {}
    for path in paths:
        key = os.path.realpath(path)
        if key in seen:
            logger.warning("--data %s is %s again: counted once", path, seen[key])
        else:
            seen[key] = path
    return list(seen.values())


def write_atomically(output_dir: str, *outputs: Any) -> None:
    """``write_outputs(output_dir, *outputs)`` through a temporary directory inside it:
    dict.txt and vocab_map.tsv are both complete, or (an error, Ctrl-C) untouched."""
    os.makedirs(output_dir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".reduce-vocab.", dir=output_dir)
    try:
        write_outputs(tmp, *outputs)
        for name in (DICT_NAME, MAP_NAME):
            os.replace(os.path.join(tmp, name), os.path.join(output_dir, name))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(args: argparse.Namespace) -> List[int]:
    if args.min_count < 1:
        raise ReduceVocabError("--min-count must be >= 1")
    check_paths(args)
    dictionary = load_dictionary_with_mask(args.dict)
    counts: Counter = Counter()
    for path in distinct_files(args.data):
        counts.update(count_tokens(strict(read_lines(path))))
    if not counts:
        raise ReduceVocabError(
            f"--data {' '.join(args.data)}: no tokens (empty files); give the "
            "subword-encoded fine-tuning text"
        )
    if not any(s in dictionary.indices for s in counts):
        raise ReduceVocabError(
            f"none of the {len(counts)} token types of --data is in --dict {args.dict}: "
            "encode the text with the sentencepiece model of this dictionary"
        )
    rows = select_rows(dictionary.symbols, dictionary.nspecial, counts, args.min_count)
    write_atomically(args.output_dir, dictionary.symbols, dictionary.nspecial, rows, counts)
    unknown = sum(c for s, c in counts.items() if s not in dictionary.indices)
    total = sum(counts.values())
    logger.info(
        "kept %d of %d rows (%d specials + %d data types + %s); %d of %d data tokens "
        "(%.2f%%) are not in the dictionary (<unk> before and after); wrote %s and %s",
        len(rows), len(dictionary), dictionary.nspecial, len(rows) - dictionary.nspecial - 1,
        MASK, unknown, total, 100.0 * unknown / max(total, 1),
        os.path.join(args.output_dir, DICT_NAME), os.path.join(args.output_dir, MAP_NAME),
    )  # fmt: skip
    return rows


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    run_cli("veco-reduce-vocab", get_parser, main, ReduceVocabError, argv)


if __name__ == "__main__":
    cli_main()
