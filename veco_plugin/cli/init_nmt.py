"""Initialize a ``veco_transformer`` translation model from a pre-trained checkpoint.

::

    veco-init-nmt --pretrained checkpoints/veco/checkpoint_best.pt \\
        --output checkpoints/nmt/init.pt --decoder-layers last:6
    fairseq-train DATA --user-dir veco_plugin --task translation_from_pretrained_veco \\
        --arch veco_transformer_large --decoder-layers 6 --restore-file checkpoints/nmt/init.pt \\
        --reset-optimizer --reset-dataloader --reset-meters ...

(the tool prints the exact fairseq-train flags the checkpoint needs).

Input: a ``veco`` checkpoint (``fairseq-train --task veco_pretraining``), or a plain
fairseq XLM-R/RoBERTa checkpoint (then every encoder-decoder attention starts random
and the log says so: the paper's XLM-R baseline). Older fairseq layouts
(``decoder.sentence_encoder``, ``emb_layer_norm``, fused in-projections) are upgraded
by fairseq's own ``upgrade_state_dict`` first.

``--decoder-layers`` picks the pre-trained layer behind each decoder layer:
``all`` (default), ``first:N``, ``last:N`` (paper Table 4: last is better) or a list
such as ``18,19,20,21,22,23``. ``--tie-layers`` makes each decoder layer share its
self-attention/FFN with the encoder layer it was initialized from during
fine-tuning. ``--vocab-map`` (from ``veco-reduce-vocab``) keeps only those embedding
rows. The dictionary (``--dict``; default: ``dict.txt`` next to the checkpoint or in
the pre-training data directory) is fingerprinted into the checkpoint so that data
binarized with another dictionary is refused with a one-line error.

This module only parses the flags: the work is :mod:`veco_plugin.nmt_init` (the pure key
map :func:`~veco_plugin.nmt_init.init_nmt_state`; the checkpoint writer
:func:`~veco_plugin.nmt_init.write_init_checkpoint`).
"""

import argparse
from typing import Any, Dict, Optional, Sequence

from ..nmt_init import InitOptions, NmtInitError, write_init_checkpoint
from .common import run_cli


def main(args: argparse.Namespace) -> Dict[str, Any]:
    """Write the checkpoint ``args`` ask for; returns it."""
    return write_init_checkpoint(
        InitOptions(
            pretrained=args.pretrained,
            output=args.output,
            decoder_layers=args.decoder_layers,
            arch=args.arch,
            tie_layers=args.tie_layers,
            dict_path=args.dict,
            vocab_map=args.vocab_map,
            keep_output_bias=args.keep_output_bias,
            seed=args.seed,
        )
    )


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        epilog=(
            "example: veco-init-nmt --pretrained PRE/checkpoint_best.pt --output "
            "init/checkpoint_init.pt --decoder-layers last:6"
        ),
        prog="veco-init-nmt",
        description="Map a veco (or XLM-R/RoBERTa) checkpoint onto a veco_transformer "
        "encoder-decoder checkpoint that fairseq-train --restore-file and fairseq-generate "
        "load. Every size comes from the checkpoint. Not carried over: the pre-training LM "
        "head (dense + GELU + LayerNorm + output bias; the decoder predicts from the tied "
        "embeddings; --keep-output-bias keeps the bias) and classification heads.",
    )
    parser.add_argument(
        "--pretrained",
        required=True,
        metavar="CKPT",
        help="veco or fairseq XLM-R/RoBERTa checkpoint",
    )
    parser.add_argument("--output", required=True, metavar="CKPT", help="checkpoint to write")
    parser.add_argument(
        "--decoder-layers",
        default="all",
        metavar="SPEC",
        help="pre-trained layers for the decoder: all, first:N, last:N or "
        "a list like 18,19,20,21,22,23 (default: all)",
    )
    parser.add_argument(
        "--arch",
        default=None,
        metavar="ARCH",
        help="veco_transformer_{tiny,small,base,large} or veco_transformer; default: "
        "the named arch of the checkpoint's sizes, else veco_transformer with every size "
        "(layers, width, FFN, heads) taken from the checkpoint and printed as flags",
    )
    parser.add_argument(
        "--tie-layers",
        action="store_true",
        help="decoder layers share self-attention/FFN (and the decoder "
        "positions) with the encoder layers they come from",
    )
    parser.add_argument(
        "--dict",
        default=None,
        metavar="FILE",
        help="the pre-training dict.txt (default: next to --pretrained, or "
        "in its pre-training data directory)",
    )
    parser.add_argument(
        "--vocab-map",
        default=None,
        metavar="FILE",
        help="vocab_map.tsv of veco-reduce-vocab: keep only these rows",
    )
    parser.add_argument(
        "--keep-output-bias",
        action="store_true",
        help="keep the pre-training LM head's output bias as the decoder's output bias "
        "(fine-tune with --decoder-output-bias; the tool prints it)",
    )
    parser.add_argument(
        "--seed", type=int, default=1, help="seed for modules that start random (XLM-R input)"
    )
    return parser


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    run_cli("veco-init-nmt", get_parser, main, NmtInitError, argv)


if __name__ == "__main__":
    cli_main()
