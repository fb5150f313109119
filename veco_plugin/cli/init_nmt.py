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

The mapping itself is :func:`veco_plugin.nmt_init.init_nmt_state` (pure, explicit key
map); this module loads, builds the target model, verifies a strict load and the
weight tying, and writes a fairseq checkpoint (with ``cfg``) atomically.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import warnings
from argparse import Namespace
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from veco_plugin.nmt_init import (
    TIED_LAYER_MODULES,
    InitReport,
    NmtInitError,
    count_layers,
    init_nmt_state,
    parse_decoder_layers,
)

from ..data.dictionary import MASK, load_dictionary_with_mask
from .common import cfg_value, checkpoint_model_cfg, run_cli
from .output import check_output, save_checkpoint

logger = logging.getLogger("veco_plugin.cli.init_nmt")

PLUGIN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = "veco_transformer"
GENERIC_ARCH = "veco_transformer"  # sizes from the command line (size_flags)
_EMBED = re.compile(r"^(encoder|decoder)\.sentence_encoder\.embed_tokens\.weight$")


class _DictionaryTask:
    """What ``build_model`` needs of a task: the (joined) dictionary."""

    def __init__(self, dictionary, max_positions: int):
        self.source_dictionary = self.target_dictionary = dictionary
        self._max_positions = max_positions

    def max_positions(self):
        return self._max_positions


def pretrained_sizes(model_state: Dict[str, torch.Tensor], model_args: Any) -> Dict[str, int]:
    """Layers, width, FFN, heads, vocabulary rows and positions of a checkpoint."""
    embed = [k for k in model_state if _EMBED.match(k)]
    if not embed:
        raise NmtInitError(
            "no *.sentence_encoder.embed_tokens.weight: not a veco/XLM-R/RoBERTa checkpoint"
        )
    prefix = embed[0].rsplit(".embed_tokens.weight", 1)[0]
    rows, dim = model_state[embed[0]].shape
    layers = count_layers(model_state, f"{prefix}.layers")
    fc1 = model_state.get(f"{prefix}.layers.0.fc1.weight")
    positions = model_state.get(f"{prefix}.embed_positions.weight")
    if fc1 is None or positions is None:
        raise NmtInitError(
            f"{prefix} has no layers.0.fc1 or no learned positions: "
            "not a veco/XLM-R/RoBERTa checkpoint"
        )
    return {
        "layers": layers,
        "dim": int(dim),
        "ffn": int(fc1.shape[0]),
        "heads": int(cfg_value(model_args, "encoder_attention_heads", 0) or 0),
        "rows": int(rows),
        "position_rows": int(positions.shape[0]),
    }


def arch_sizes(arch: str) -> Dict[str, int]:
    from fairseq.models import ARCH_CONFIG_REGISTRY

    ns = Namespace()
    ARCH_CONFIG_REGISTRY[arch](ns)
    return {
        "layers": ns.encoder_layers,
        "dim": ns.encoder_embed_dim,
        "ffn": ns.encoder_ffn_embed_dim,
        "heads": ns.encoder_attention_heads,
    }


def _describe(sizes: Dict[str, int]) -> str:
    heads = f", {sizes['heads']} heads" if sizes.get("heads") else ""
    return f"{sizes['layers']} layers x {sizes['dim']} (FFN {sizes['ffn']}{heads})"


def resolve_arch(requested: Optional[str], sizes: Dict[str, int]) -> str:
    """The ``veco_transformer_*`` arch whose sizes are the checkpoint's, else the generic
    ``veco_transformer`` (every size from :func:`size_flags`)."""
    from fairseq.models import ARCH_MODEL_INV_REGISTRY

    named = sorted(a for a in ARCH_MODEL_INV_REGISTRY[MODEL] if a != GENERIC_ARCH)

    def matches(arch: str) -> bool:
        own = arch_sizes(arch)
        return all(own[k] == sizes[k] for k in ("layers", "dim", "ffn")) and (
            not sizes["heads"] or own["heads"] == sizes["heads"]
        )

    fitting = [a for a in named if matches(a)]
    if requested == GENERIC_ARCH:
        return requested
    if requested is not None:
        if requested not in named:
            raise NmtInitError(
                f"--arch {requested}: unknown; choose one of {', '.join(named)} "
                f"or {GENERIC_ARCH} (sizes from the checkpoint)"
            )
        if not matches(requested):
            hint = f"--arch {fitting[0]}" if fitting else f"--arch {GENERIC_ARCH}"
            raise NmtInitError(
                f"--arch {requested} is {_describe(arch_sizes(requested))} but the checkpoint "
                f"is {_describe(sizes)}: use {hint} (or leave --arch out)"
            )
        return requested
    return fitting[0] if fitting else GENERIC_ARCH


def size_flags(arch: str, sizes: Dict[str, int]) -> List[str]:
    """fairseq-train flags that give ``arch`` the checkpoint's sizes (none for a named
    arch of exactly these sizes; the decoder's width, FFN and heads follow the encoder's)."""
    if arch != GENERIC_ARCH:
        return []
    if not sizes["heads"]:
        raise NmtInitError(
            "the checkpoint's config does not say its number of attention heads and no "
            f"named arch has its sizes ({_describe(sizes)}): pass the --arch it was trained as"
        )
    return [
        "--encoder-layers", str(sizes["layers"]),
        "--encoder-embed-dim", str(sizes["dim"]),
        "--encoder-ffn-embed-dim", str(sizes["ffn"]),
        "--encoder-attention-heads", str(sizes["heads"]),
    ]  # fmt: skip


def normalize_pretrained(
    model_state: Dict[str, torch.Tensor], sizes: Dict[str, int], padding_idx: int
) -> Dict[str, torch.Tensor]:
    """The layout upgrade ``--pretrained-xlmr`` uses (``upgrade_pretrained_state``), on a
    ``veco`` model of these sizes."""
    from fairseq.data import Dictionary

    from veco_plugin.models.veco import VecoModel, upgrade_pretrained_state

    dictionary = Dictionary()
    while len(dictionary) < sizes["rows"]:
        dictionary.add_symbol(f"<row{len(dictionary)}>")
    max_positions = sizes["position_rows"] - padding_idx - 1
    args = Namespace(
        encoder_layers=sizes["layers"],
        encoder_embed_dim=sizes["dim"],
        encoder_ffn_embed_dim=sizes["ffn"],
        encoder_attention_heads=sizes["heads"] or 1,
        max_positions=max_positions,
    )
    model = VecoModel.build_model(args, _DictionaryTask(dictionary, max_positions))
    return upgrade_pretrained_state(model, model_state)


def find_dictionary(explicit: Optional[str], pretrained: str, state: Dict[str, Any]) -> str:
    if explicit:
        if not os.path.isfile(explicit):
            raise NmtInitError(f"--dict {explicit}: no such file")
        return explicit
    candidates = [os.path.join(os.path.dirname(os.path.abspath(pretrained)), "dict.txt")]
    cfg = state.get("cfg")
    task = cfg.get("task") if cfg is not None else None
    data = cfg_value(task, "data") or cfg_value(state.get("args"), "data")
    if data:
        candidates.append(os.path.join(str(data).split(os.pathsep)[0], "dict.txt"))
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise NmtInitError(
        "cannot find the pre-training dictionary (looked for "
        + ", ".join(candidates)
        + "): pass --dict <pretrained dict.txt>"
    )


def target_dictionary(args: argparse.Namespace, state: Dict[str, Any], rows: int):
    """The fine-tuning dictionary (+<mask>) and the embedding rows to keep (or None)."""
    from fairseq.data import Dictionary

    from veco_plugin.cli.reduce_vocab import ReduceVocabError, read_vocab_map

    if args.vocab_map:
        try:
            keep, symbols = read_vocab_map(args.vocab_map)
        except (OSError, ReduceVocabError) as exc:
            raise NmtInitError(f"--vocab-map: {exc}") from None
        reduced = Dictionary()
        if symbols[: reduced.nspecial] != reduced.symbols or keep[: reduced.nspecial] != list(
            range(reduced.nspecial)
        ):
            raise NmtInitError(f"--vocab-map {args.vocab_map}: must start with the special symbols")
        if symbols[-1] != MASK:
            raise NmtInitError(f"--vocab-map {args.vocab_map}: the last row must be {MASK}")
        for symbol in symbols[reduced.nspecial : -1]:
            reduced.add_symbol(symbol)
        reduced.add_symbol(MASK)
        if reduced.symbols != symbols:
            raise NmtInitError(f"--vocab-map {args.vocab_map}: repeated symbols")
        try:
            full = load_dictionary_with_mask(find_dictionary(args.dict, args.pretrained, state))
        except NmtInitError:
            if args.dict:
                raise
            full = None  # the map alone defines the rows; nothing to cross-check
        if full is not None:
            wrong = [s for s, r in zip(symbols, keep) if r >= len(full) or full.symbols[r] != s]
            if wrong:
                raise NmtInitError(
                    f"--vocab-map {args.vocab_map} does not match the pre-training dictionary "
                    f"(e.g. {wrong[0]!r}): re-run veco-reduce-vocab with this dict.txt"
                )
        return reduced, keep
    path = find_dictionary(args.dict, args.pretrained, state)
    dictionary = load_dictionary_with_mask(path)
    if len(dictionary) != rows:
        raise NmtInitError(
            f"{path} has {len(dictionary)} types with {MASK} but the checkpoint's embeddings "
            f"{rows} rows: pass the dict.txt the model was pre-trained with (--dict)"
        )
    logger.info("dictionary %s: %d types (with %s)", path, len(dictionary), MASK)
    return dictionary, None


def build_target(
    arch: str,
    sizes: List[str],
    dictionary,
    decoder_layers: int,
    max_positions: int,
    tied: Optional[List[int]],
    data: str,
    output_bias: bool = False,
) -> Tuple[Any, Namespace]:
    """The ``veco_transformer`` model exactly as fairseq-train will build it."""
    from fairseq import options
    from fairseq.models import ARCH_MODEL_REGISTRY

    argv = [
        data, "--user-dir", PLUGIN_DIR, "--task", "translation_from_pretrained_veco",
        "--arch", arch, *sizes, "--decoder-layers", str(decoder_layers),
        "--max-source-positions", str(max_positions),
        "--max-target-positions", str(max_positions),
    ]  # fmt: skip
    if tied:
        argv += ["--tie-decoder-to-encoder-layers", ",".join(map(str, tied))]
    if output_bias:
        argv.append("--decoder-output-bias")
    args = options.parse_args_and_arch(options.get_training_parser(), argv)
    model = ARCH_MODEL_REGISTRY[arch].build_model(args, _DictionaryTask(dictionary, max_positions))
    return model, args


def check_tied(model, tied: Optional[List[int]]) -> None:
    """Assert the weight sharing the checkpoint relies on."""
    enc, dec = model.encoder, model.decoder
    if not (
        enc.embed_tokens.weight is dec.embed_tokens.weight
        and dec.output_projection.weight is enc.embed_tokens.weight
    ):
        raise RuntimeError("source, target and output embeddings are not one matrix")
    for j, i in enumerate(tied or []):
        for name in TIED_LAYER_MODULES:
            if getattr(dec.layers[j], name) is not getattr(enc.layers[i], name):
                raise RuntimeError(f"decoder.layers.{j}.{name} is not encoder.layers.{i}.{name}")


def checkpoint_state(model, args: Namespace, report: InitReport, source: str) -> Dict[str, Any]:
    """A fairseq checkpoint (as ``Trainer.state_dict`` writes it) at update 0."""
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from omegaconf import OmegaConf

    with warnings.catch_warnings():  # hydra's deprecation notices about fairseq's configs
        warnings.simplefilter("ignore")
        cfg = convert_namespace_to_omegaconf(args)
    return {
        "args": None,
        "cfg": OmegaConf.to_container(cfg, resolve=True, enum_to_str=True),
        "model": model.state_dict(),
        "criterion": None,
        "optimizer_history": [
            {
                "criterion_name": "veco-init-nmt",
                "optimizer_name": "none",
                "lr_scheduler_state": {},
                "num_updates": 0,
            }
        ],
        "last_optimizer_state": None,
        "task_state": {},
        "extra_state": {
            "train_iterator": {"epoch": 1, "iterations_in_epoch": 0, "shuffle": True, "version": 2},
            "previous_training_time": 0,
            "veco_init_nmt": {
                "pretrained": source,
                "source_kind": report.source_kind,
                "decoder_source_layers": list(report.decoder_source_layers),
                "random_modules": list(report.random_modules),
                "kept_output_bias": report.kept_output_bias,
            },
        },
    }


def train_flags(
    arch: str,
    sizes: List[str],
    decoder_layers: int,
    max_positions: int,
    tied,
    output: str,
    output_bias: bool = False,
) -> str:
    flags = [
        f"--user-dir {PLUGIN_DIR}", "--task translation_from_pretrained_veco",
        " ".join(["--arch", arch, *sizes]), f"--decoder-layers {decoder_layers}",
    ]  # fmt: skip
    if tied:
        flags.append("--tie-decoder-to-encoder-layers " + ",".join(map(str, tied)))
    if output_bias:
        flags.append("--decoder-output-bias")
    if max_positions != 512:
        flags.append(f"--max-source-positions {max_positions}")
        flags.append(f"--max-target-positions {max_positions}")
    flags.append(f"--restore-file {output} --reset-optimizer --reset-dataloader --reset-meters")
    return " ".join(flags)


def _log_report(report: InitReport, source: str) -> None:
    logger.info(
        "initialized from %s (%s): decoder layers <- pre-trained layers %s",
        source, report.source_kind, ",".join(map(str, report.decoder_source_layers)),
    )  # fmt: skip
    if report.random_modules:
        logger.warning(
            "%d modules start random (no cross-attention in %s): %s",
            len(report.random_modules), source, ", ".join(report.random_modules),
        )  # fmt: skip
    else:
        logger.info("no module starts random")
    if report.dropped_modules:
        logger.info("not used: %s", ", ".join(report.dropped_modules))
    if "encoder.lm_head" in report.dropped_modules and report.kept_output_bias:
        logger.warning(
            "dropped the pre-training LM head's dense + GELU + LayerNorm: the decoder "
            "predicts from the tied embeddings plus the head's output bias"
        )
    elif "encoder.lm_head" in report.dropped_modules:
        logger.warning(
            "dropped the pre-training LM head (dense + GELU + LayerNorm + output bias): the "
            "decoder predicts from the tied embeddings alone (--keep-output-bias keeps the bias)"
        )


def main(args: argparse.Namespace) -> Dict[str, Any]:
    from fairseq import utils as fairseq_utils

    from veco_plugin.trusted_load import load_trusted

    fairseq_utils.import_user_module(Namespace(user_dir=PLUGIN_DIR))
    if not os.path.isfile(args.pretrained):
        raise NmtInitError(f"--pretrained {args.pretrained}: no such file")
    check_output(args.output)
    try:
        state = load_trusted(args.pretrained)
    except Exception as exc:  # corrupt or not a checkpoint
        raise NmtInitError(f"{args.pretrained}: cannot load ({exc})") from None
    if not isinstance(state, dict) or "model" not in state:
        raise NmtInitError(f"{args.pretrained} has no 'model' entry: not a fairseq checkpoint")
    model_args = checkpoint_model_cfg(state)
    sizes = pretrained_sizes(state["model"], model_args)
    arch = resolve_arch(args.arch, sizes)
    arch_flags = size_flags(arch, sizes)
    layers = parse_decoder_layers(args.decoder_layers, sizes["layers"])
    tied = layers if args.tie_layers else None

    dictionary, keep = target_dictionary(args, state, sizes["rows"])
    max_positions = sizes["position_rows"] - dictionary.pad() - 1
    pretrained = normalize_pretrained(state["model"], sizes, dictionary.pad())
    torch.manual_seed(args.seed)  # the modules that start random
    data = os.path.dirname(os.path.abspath(args.vocab_map or args.dict or args.pretrained))
    model, train_args = build_target(
        arch, arch_flags, dictionary, len(layers), max_positions, tied, data,
        args.keep_output_bias,
    )  # fmt: skip
    mapped, report = init_nmt_state(pretrained, model.state_dict(), layers, keep)
    model.load_state_dict(mapped, strict=True)
    check_tied(model, tied)
    _log_report(report, args.pretrained)

    out = checkpoint_state(model, train_args, report, args.pretrained)
    save_checkpoint(out, args.output)  # atomic: <output>.tmp, then rename
    logger.info("wrote %s; fine-tune with: fairseq-train DATA %s", args.output,
                train_flags(arch, arch_flags, len(layers), max_positions, tied,
                            args.output, args.keep_output_bias))  # fmt: skip
    return out


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
