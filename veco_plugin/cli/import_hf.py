"""Import a Hugging Face XLM-R directory (XLM-R, InfoXLM, XLM-Align, VECO's NLU release) as
fairseq's released XLM-R layout.

::

    veco-import-hf hf/xlm-align-base --out xlm-align.base
    # xlm-align.base/{model.pt,dict.txt,sentencepiece.bpe.model}, as xlmr.base.tar.gz unpacks

Then ``XLMRModel.from_pretrained("xlm-align.base", checkpoint_file="model.pt")``,
``--pretrained-xlmr xlm-align.base/model.pt``, ``veco-align --path xlm-align.base/model.pt``,
``veco-retrieve``, ``veco-init-nmt --pretrained``. Needs no ``transformers``; safetensors
weights need the ``safetensors`` package. What is written: :mod:`veco_plugin.export.import_hf`.
"""

import argparse
import logging
import os
import re
from typing import Optional, Sequence

from ..errors import VecoUserError
from ..export.import_hf import CHECKPOINT_FILE, PAD, ImportResult, import_model
from ..outputs import check_output_dir
from .common import run_cli

PROG = "veco-import-hf"
HEAD_NAME = re.compile(r"\w+", re.ASCII)
logger = logging.getLogger("veco_plugin.cli.import_hf")


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        epilog="example: veco-import-hf hf/xlm-align-base --out xlm-align.base",
        prog=PROG,
        description="Write a Hugging Face XLM-R-layout directory (XLMRobertaForMaskedLM, "
        "XLMRobertaModel or XLMRobertaForSequenceClassification; config.json, "
        "model.safetensors or pytorch_model.bin, sentencepiece.bpe.model) as fairseq's "
        "released XLM-R layout: model.pt, dict.txt, sentencepiece.bpe.model.",
    )
    parser.add_argument("hf_dir", metavar="HF_DIR", help="the Hugging Face model directory")
    parser.add_argument(
        "--out",
        "--output",
        dest="output",
        required=True,
        metavar="DIR",
        help="directory to write (new or empty; its files appear when all are written)",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="write into a non-empty --out directory"
    )
    parser.add_argument(
        "--classification-head-name",
        default="sentence_classification_head",
        metavar="NAME",
        help="fairseq name of a sequence-classification head (fairseq's default)",
    )
    return parser


def check_head_name(name: str) -> None:
    """A classification head's name is one key part of fairseq's state dict."""
    if not HEAD_NAME.fullmatch(name):
        raise VecoUserError(
            f"--classification-head-name {name!r}: letters, digits and '_' only (it becomes "
            "part of the parameter names, e.g. sentence_classification_head)"
        )


def main(args: argparse.Namespace) -> ImportResult:
    """Import ``args.hf_dir`` into ``args.output``."""
    check_head_name(args.classification_head_name)
    check_output_dir(args.output, "--out", overwrite=args.overwrite)
    result = import_model(args.hf_dir, args.output, args.classification_head_name)
    shape = result.shape
    logger.info(
        "wrote %s: fairseq XLM-R, %d layers x %d, %d symbols, %d positions (from %s)",
        os.path.join(args.output, CHECKPOINT_FILE),
        shape.layers,
        shape.dim,
        result.symbols,
        shape.positions - PAD - 1,
        result.weights,
    )
    return result


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    """Console entry point ``veco-import-hf``; exits 1 with one line on a user error."""
    run_cli(PROG, get_parser, main, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
