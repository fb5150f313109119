"""Export a veco or fairseq RoBERTa/XLM-R checkpoint to a Hugging Face XLM-R directory.

::

    veco-export-hf --path checkpoints/dwa/checkpoint_best.pt --spm-model DATA/spm.model \\
        --dict DATA/dict.txt --output hf/veco-dwa
    veco-export-hf --path xlmr.base/model.pt --output hf/xlmr.base

Then ``XLMRobertaModel.from_pretrained("hf/veco-dwa")``,
``XLMRobertaForMaskedLM.from_pretrained(...)`` and ``AutoTokenizer.from_pretrained(...)``.
Needs ``transformers`` (``pip install 'veco_plugin[hf]'``). What is written:
:mod:`veco_plugin.export.hf`.
"""

import argparse
import logging
import os
from typing import Any, Dict, Optional, Sequence

from ..checkpoints.encoder import check_checkpoint_path, find_spm_model, load_encoder
from ..errors import VecoUserError
from ..export.hf import SPM_FILE, export_model, read_spm_model, require_transformers
from ..export.import_hf import CONFIG_FILE
from ..outputs import check_output_dir, staged_dir
from .common import run_cli

logger = logging.getLogger("veco_plugin.cli.export_hf")


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        epilog="example: veco-export-hf --path PRE/checkpoint_best.pt --output hf/veco",
        prog="veco-export-hf",
        description="Write the plug-out encoder of a checkpoint (veco: ca_mlm, tlm, dwa, "
        "align_mlm, ...; or fairseq RoBERTa/XLM-R) and its tied LM head as a Hugging Face "
        "XLMRobertaForMaskedLM directory with a sentencepiece tokenizer giving the fairseq "
        "dictionary's ids. Cross-attention and dwa's pointer network are left out.",
    )
    parser.add_argument("--path", required=True, metavar="CKPT", help="the checkpoint")
    parser.add_argument(
        "--spm-model",
        metavar="MODEL",
        help="its sentencepiece model (default: sentencepiece.bpe.model or spm.model next "
        "to CKPT, else in the data directory recorded in CKPT)",
    )
    parser.add_argument(
        "--dict",
        metavar="DICT",
        help="its dictionary (default: dict.txt next to CKPT, else in the data directory "
        "recorded in CKPT)",
    )
    parser.add_argument(
        "--output",
        required=True,
        metavar="DIR",
        help="directory to write (new or empty; its files appear when all are written)",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="write into a non-empty --output directory"
    )
    return parser


def check_path(path: str) -> None:
    """``--path`` is a checkpoint file, not a Hugging Face directory (the other direction)."""
    if os.path.isfile(os.path.join(path, CONFIG_FILE)):
        raise VecoUserError(
            f"--path {path} is a Hugging Face model directory: veco-export-hf reads fairseq "
            f"checkpoints; to read it into fairseq, run veco-import-hf {path} --out DIR"
        )
    check_checkpoint_path(path)


def check_spm_kept(output: str, spm_model: str) -> None:
    """Refuse an ``--output`` whose export would replace ``--spm-model`` (the released
    layout's ``sentencepiece.bpe.model``) by its rewritten copy."""
    target = os.path.join(output, SPM_FILE)
    if os.path.exists(target) and os.path.exists(spm_model) and os.path.samefile(target, spm_model):
        raise VecoUserError(
            f"--output {output} holds --spm-model {spm_model}, which the export would replace "
            "by its rewritten copy: give another --output directory"
        )


def main(args: argparse.Namespace) -> Dict[str, Any]:
    """Export ``args.path`` to ``args.output``; return the config written."""
    require_transformers()
    check_output_dir(args.output, "--output", overwrite=args.overwrite)
    check_path(args.path)
    spm_model = find_spm_model(args.spm_model, args.path)
    check_spm_kept(args.output, spm_model)
    read_spm_model(spm_model)
    model, dictionary = load_encoder(args.path, args.dict)
    with staged_dir(args.output) as stage:
        report, config = export_model(model, dictionary, spm_model, stage)
    logger.info(
        "wrote %s: XLM-R, %d layers x %d, %d symbols, %d positions",
        args.output,
        config["num_hidden_layers"],
        config["hidden_size"],
        config["vocab_size"],
        config["max_position_embeddings"],
    )
    return config


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    """Console entry point ``veco-export-hf``; exits 1 with one line on a user error."""
    run_cli("veco-export-hf", get_parser, main, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
