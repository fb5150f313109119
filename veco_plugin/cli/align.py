"""Word-align translation pairs with a veco or fairseq RoBERTa/XLM-R checkpoint.

::

    veco-align --path checkpoints/dwa/checkpoint_best.pt --spm-model DATA/spm.model \\
        --dict DATA/dict.txt --src test.en --tgt test.de --output test.align
    veco-align --path xlmr.base/model.pt --src test.en --tgt test.de --method itermax

Writes one Pharaoh line per sentence pair (``i-j``, 0-based word indices), in input order;
score it with ``veco-aer``. The method and the encoding: :mod:`veco_plugin.alignment.aligner`.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from typing import List, Optional, Sequence

import torch

from ..alignment.aligner import METHODS, align_pairs, word_pieces
from ..checkpoints.encoder import check_checkpoint_path, load_encoder
from ..errors import VecoUserError
from ..evaluation.aer import read_parallel
from ..outputs import check_named, check_output_file, write_text
from .common import check_at_least, run_cli

logger = logging.getLogger("veco_plugin.cli.align")

# the flags naming files, as ``args`` attributes
_FILE_FLAGS = ("path", "spm_model", "bpe_codes", "dict", "src", "tgt", "output")


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        epilog=(
            "example: veco-align --path xlmr.base/model.pt --src test.en --tgt test.de "
            "--output test.align"
        ),
        prog="veco-align",
        description="Word-align line-aligned, whitespace-tokenized sentence pairs with the "
        "hidden states of a pre-trained encoder (XLM-Align §3.1). Each pair is encoded as in "
        "training, '<s> src </s> <s> tgt </s>' with continuous positions; a pair longer than "
        "the model's positions is truncated, each side in proportion to its length (a "
        "warning counts them; words past the cut stay unaligned). Output: one Pharaoh line "
        "'i-j ...' (0-based source-target word indices) per pair, in input order; an empty "
        "line for a pair without links.",
    )
    parser.add_argument(
        "--path",
        required=True,
        metavar="CKPT",
        help="checkpoint: veco (fairseq-train --task veco_pretraining) or fairseq "
        "RoBERTa/XLM-R (masked_lm, e.g. the released xlmr.base/model.pt)",
    )
    subwords = parser.add_mutually_exclusive_group()
    subwords.add_argument(
        "--spm-model",
        metavar="MODEL",
        help="sentencepiece model the checkpoint was trained with (default: "
        "sentencepiece.bpe.model or spm.model next to CKPT, else in the data directory "
        "recorded in CKPT)",
    )
    subwords.add_argument(
        "--bpe-codes",
        metavar="CODES",
        help="fastBPE codes instead (needs fastBPE: scripts/install-fastbpe.sh)",
    )
    parser.add_argument(
        "--dict",
        metavar="DICT",
        help="the model's dictionary (default: dict.txt next to CKPT, else in the data "
        "directory recorded in CKPT)",
    )
    parser.add_argument(
        "--src",
        required=True,
        metavar="FILE",
        help="source sentences, whitespace-tokenized, one per line",
    )
    parser.add_argument(
        "--tgt", required=True, metavar="FILE", help="target sentences, line-aligned with --src"
    )
    parser.add_argument(
        "--layer",
        type=int,
        metavar="N",
        help="hidden layer to align, 1..L (0: the embeddings; default: the paper's depth, "
        "layer 8 of 12, i.e. round(L * 8/12))",
    )
    parser.add_argument(
        "--method",
        choices=METHODS,
        default="ot",
        help="ot: optimal transport + iterative filtering (XLM-Align, the paper's); argmax: "
        "pieces that are each other's argmax (SimAlign); itermax: SimAlign's iterative argmax; "
        "all on the dot-product similarity of XLM-Align's eq. 1 (default: %(default)s)",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=32,
        metavar="N",
        help="pairs per forward, sorted by length (default: 32)",
    )
    parser.add_argument(
        "--max-tokens", type=int, metavar="N", help="also cap the padded tokens per forward"
    )
    parser.add_argument(
        "--output", metavar="FILE", help="write the alignments here (default: stdout)"
    )
    parser.add_argument(
        "--cpu", action="store_true", help="run on the CPU (default: the GPU if there is one)"
    )
    precision = parser.add_mutually_exclusive_group()
    precision.add_argument("--fp16", action="store_true", help="half precision (GPU only)")
    precision.add_argument("--bf16", action="store_true", help="bfloat16 precision")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return parser


def _device_and_dtype(args: argparse.Namespace):
    device = torch.device("cuda" if torch.cuda.is_available() and not args.cpu else "cpu")
    if args.fp16 and device.type != "cuda":
        raise VecoUserError("--fp16 needs a GPU: drop it (or use --bf16) on the CPU")
    dtype = torch.float16 if args.fp16 else torch.bfloat16 if args.bf16 else torch.float32
    return device, dtype


def _check_flags(args: argparse.Namespace) -> None:
    """Numbers, combinations and file names, before any file is read."""
    check_named({f"--{k.replace('_', '-')}": getattr(args, k) for k in _FILE_FLAGS})
    check_at_least(args.batch_size, "--batch-size")
    check_at_least(args.max_tokens, "--max-tokens")
    check_at_least(args.layer, "--layer", 0)


def main(args: argparse.Namespace) -> List[str]:
    """Align ``args.src`` with ``args.tgt``; write the lines; return them."""
    _check_flags(args)
    device, dtype = _device_and_dtype(args)
    src_lines, tgt_lines = read_parallel(args.src, args.tgt)
    if not any(s.split() and t.split() for s, t in zip(src_lines, tgt_lines)):
        raise VecoUserError(
            f"no pair of --src {args.src} and --tgt {args.tgt} has words on both sides "
            f"({len(src_lines)} lines): nothing to align; give whitespace-tokenized sentences"
        )
    if args.output:
        inputs = {"--src": args.src, "--tgt": args.tgt, "--path": args.path}
        inputs.update({"--dict": args.dict, "--spm-model": args.spm_model})
        inputs["--bpe-codes"] = args.bpe_codes
        check_output_file(args.output, "--output", "out.align", inputs)
    check_checkpoint_path(args.path)
    pieces = word_pieces(args.spm_model, args.bpe_codes, args.path)
    model, dictionary = load_encoder(args.path, args.dict, device, dtype)
    start = time.perf_counter()
    lines = align_pairs(
        model,
        dictionary,
        pieces,
        src_lines,
        tgt_lines,
        layer=args.layer,
        method=args.method,
        batch_size=args.batch_size,
        max_tokens=args.max_tokens,
        progress=not args.no_progress,
    )
    seconds = time.perf_counter() - start
    text = "".join(line + "\n" for line in lines)
    if args.output:
        write_text(args.output, text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    logger.info(
        "aligned %d pairs in %.2f s (%.1f pairs/s) on %s",
        len(lines),
        seconds,
        len(lines) / max(seconds, 1e-9),
        device,
    )
    return lines


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    """Console entry point ``veco-align``; exits 1 with one line on a user error."""
    run_cli("veco-align", get_parser, main, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
