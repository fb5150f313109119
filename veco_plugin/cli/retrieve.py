"""Parallel-sentence retrieval accuracy of a veco or fairseq RoBERTa/XLM-R checkpoint.

::

    veco-retrieve --path checkpoints/ca_mlm/checkpoint_best.pt --spm-model DATA/spm.model \\
        --dict DATA/dict.txt --src test.en --tgt test.de
    veco-retrieve --path xlmr.base/model.pt --src test.en --tgt test.de --scoring margin

Prints the top-1 accuracy in both directions (Tatoeba-style); ``--json`` also writes them.
The embedding, scoring and search: :mod:`veco_plugin.evaluation.retrieval`.
"""

import argparse
import json
import logging
import sys
import time
from typing import Any, List, Optional, Sequence, Tuple

import torch
from fairseq.data import Dictionary
from fairseq.models.roberta import RobertaModel

from ..alignment.aligner import warn_unknown_pieces
from ..checkpoints.encoder import (
    check_checkpoint_path,
    find_spm_model,
    load_encoder,
    load_spm_model,
)
from ..errors import VecoUserError
from ..evaluation.aer import read_parallel
from ..evaluation.retrieval import (
    MARGIN_K,
    SCORINGS,
    SEARCHES,
    RetrievalResult,
    check_search,
    embed,
    evaluate,
    sentence_ids,
)
from ..models.features import resolve_layer
from ..models.layer_spec import DEFAULT_DEPTHS
from ..outputs import check_named, check_output_file, write_text
from .common import check_at_least, run_cli

logger = logging.getLogger("veco_plugin.cli.retrieve")

# the flags naming files, as ``args`` attributes
_FILE_FLAGS = ("path", "spm_model", "dict", "src", "tgt", "json")


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        epilog=(
            "example: veco-retrieve --path PRE/checkpoint_best.pt --src test.en --tgt "
            "test.de --scoring margin"
        ),
        prog="veco-retrieve",
        description="Top-1 retrieval accuracy between two line-aligned files of raw "
        "sentences (Tatoeba-style, both directions): each sentence is embedded alone by the "
        "plug-out encoder (mean of one layer's states over its tokens) and retrieves its "
        "nearest neighbour on the other side.",
    )
    parser.add_argument(
        "--path",
        required=True,
        metavar="CKPT",
        help="checkpoint: veco (ca_mlm, tlm, dwa, ...) or fairseq RoBERTa/XLM-R model.pt",
    )
    parser.add_argument(
        "--spm-model",
        metavar="MODEL",
        help="sentencepiece model of the checkpoint (default: sentencepiece.bpe.model or "
        "spm.model next to CKPT, else in the data directory recorded in CKPT)",
    )
    parser.add_argument(
        "--dict",
        metavar="DICT",
        help="the model's dictionary (default: dict.txt next to CKPT, else in the data "
        "directory recorded in CKPT)",
    )
    parser.add_argument("--src", required=True, metavar="FILE", help="source sentences, raw text")
    parser.add_argument(
        "--tgt", required=True, metavar="FILE", help="target sentences, line-aligned with --src"
    )
    parser.add_argument(
        "--layer",
        type=int,
        metavar="N",
        help="layer to mean-pool, 0..L (0: the embeddings; default: a middle layer, "
        f"round(L * {DEFAULT_DEPTHS['retrieve'] * 12:.0f}/12), i.e. 7 of 12, 1 of 2)",
    )
    parser.add_argument(
        "--scoring",
        choices=SCORINGS,
        default="cosine",
        help="cosine: nearest neighbour; margin: ratio margin over k neighbours (Artetxe & "
        "Schwenk 2019, BUCC) (default: %(default)s)",
    )
    parser.add_argument(
        "--k",
        type=int,
        metavar="K",
        help=f"margin neighbourhood, with --scoring margin (default: {MARGIN_K})",
    )
    parser.add_argument(
        "--search",
        choices=SEARCHES,
        default="auto",
        help="exact search backend; auto: faiss from 50000 sentences if installed, else "
        "torch (default: %(default)s)",
    )
    parser.add_argument(
        "--batch-size", type=int, default=64, metavar="N", help="sentences per forward"
    )
    parser.add_argument("--json", metavar="FILE", help="also write the accuracies as JSON")
    parser.add_argument(
        "--cpu", action="store_true", help="run on the CPU (default: the GPU if there is one)"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return parser


def _sentence_ids(
    sides: Sequence[List[str]], model: RobertaModel, dictionary: Dictionary, spm: Any
) -> List[List[List[int]]]:
    """``<s> pieces </s>`` ids of the raw lines of each side, cut into pieces by ``spm`` (a
    ``SentencePieceProcessor``); one warning counts the sentences cut to the positions,
    one more says when most pieces are ``<unk>``."""
    positions = int(model.max_positions())
    encoded = [
        sentence_ids(spm.encode(lines, out_type=str), dictionary, positions) for lines in sides
    ]
    cut = sum(n for _, n in encoded)
    if cut:
        logger.warning("%d sentences cut to the model's %d positions", cut, positions)
    warn_unknown_pieces([row[1:-1] for ids, _ in encoded for row in ids], dictionary)
    return [ids for ids, _ in encoded]


def _check_flags(args: argparse.Namespace) -> int:
    """Numbers, combinations and file names, before any file is read; returns the
    margin's k."""
    check_named({f"--{k.replace('_', '-')}": getattr(args, k) for k in _FILE_FLAGS})
    check_at_least(args.batch_size, "--batch-size")
    check_at_least(args.layer, "--layer", 0)
    check_at_least(args.k, "--k")
    if args.k is not None and args.scoring != "margin":
        raise VecoUserError(
            f"--k {args.k} sets the margin's neighbourhood, which --scoring {args.scoring} does "
            "not use: add --scoring margin, or drop --k"
        )
    check_search(args.search)
    return MARGIN_K if args.k is None else args.k


def _read_sentences(args: argparse.Namespace) -> Tuple[List[str], List[str]]:
    """The line-aligned sentences: at least two pairs, each side not all blank."""
    src_lines, tgt_lines = read_parallel(args.src, args.tgt)
    for flag, path, lines in (("--src", args.src, src_lines), ("--tgt", args.tgt, tgt_lines)):
        if not any(line.strip() for line in lines):
            raise VecoUserError(
                f"{flag} {path} holds no sentence ({len(lines)} blank lines): give one "
                "sentence per line"
            )
    if len(src_lines) < 2:
        raise VecoUserError(
            f"--src {args.src} and --tgt {args.tgt} hold 1 sentence pair: retrieval needs at "
            "least 2 (a single candidate is always found)"
        )
    if args.k is not None and args.k > len(src_lines):
        raise VecoUserError(
            f"--k {args.k}: the neighbourhood is at most the {len(src_lines)} sentence pairs "
            f"of --src/--tgt; give --k {min(MARGIN_K, len(src_lines))}"
        )
    return src_lines, tgt_lines


def main(args: argparse.Namespace) -> RetrievalResult:
    """Embed ``args.src`` and ``args.tgt``, retrieve, print and return the accuracies."""
    k = _check_flags(args)
    src_lines, tgt_lines = _read_sentences(args)
    if args.json:
        inputs = {"--src": args.src, "--tgt": args.tgt, "--path": args.path}
        inputs.update({"--dict": args.dict, "--spm-model": args.spm_model})
        check_output_file(args.json, "--json", "retrieval.json", inputs)
    check_checkpoint_path(args.path)
    spm_model = find_spm_model(args.spm_model, args.path)
    spm = load_spm_model(spm_model)
    device = torch.device("cuda" if torch.cuda.is_available() and not args.cpu else "cpu")
    model, dictionary = load_encoder(args.path, args.dict, device)
    layer = resolve_layer(model, args.layer, "retrieve")
    start = time.perf_counter()
    src, tgt = (
        embed(model, side, layer, dictionary.pad(), args.batch_size, not args.no_progress)
        for side in _sentence_ids((src_lines, tgt_lines), model, dictionary, spm)
    )
    result = evaluate(src, tgt, layer=layer, scoring=args.scoring, k=k, search=args.search)
    logger.info(
        "embedded 2 x %d sentences and searched (%s) in %.2f s on %s",
        result.sentences,
        result.search,
        time.perf_counter() - start,
        device,
    )
    sys.stdout.write(report(result))
    sys.stdout.flush()
    if args.json:
        write_text(args.json, json.dumps(result.as_dict(), indent=2) + "\n")
    return result


def report(result: RetrievalResult) -> str:
    """Two lines: the accuracy in each direction, with the settings."""
    settings = f"layer {result.layer}, {result.scoring}"
    settings += f", k={result.k}" if result.scoring == "margin" else ""
    lines: List[str] = [
        f"src->tgt top-1 accuracy {100 * result.src2tgt:.2f} "
        f"({result.sentences} sentences; {settings})",
        f"tgt->src top-1 accuracy {100 * result.tgt2src:.2f} "
        f"({result.sentences} sentences; {settings})",
    ]
    return "".join(line + "\n" for line in lines)


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    """Console entry point ``veco-retrieve``; exits 1 with one line on a user error."""
    run_cli("veco-retrieve", get_parser, main, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
