"""The ``veco-init-nmt`` checkpoint: pre-trained checkpoint in, fairseq trainer checkpoint out.

:func:`write_init_checkpoint` loads the pre-trained checkpoint, infers its sizes
(:mod:`..checkpoints.sizes`), finds its dictionary (:mod:`.vocab`), builds the ``veco_transformer``
exactly as ``fairseq-train`` will (same flags, same task), maps the weights with the
pure :func:`.keymap.init_nmt_state`, verifies a strict load and the weight tying, and
writes a checkpoint as ``Trainer.state_dict`` does (``cfg`` included) at update 0,
atomically. ``fairseq-train --restore-file`` (or ``--finetune-from-model``) and
``fairseq-generate --path`` load it; the log gives the exact fairseq-train flags.
"""

import logging
import os
import warnings
from argparse import Namespace
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import torch
from fairseq.data import Dictionary
from fairseq.models import BaseFairseqModel
from torch import Tensor

from ..checkpoints.config import checkpoint_model_cfg
from ..checkpoints.files import check_output, save_checkpoint
from ..checkpoints.sizes import (
    PretrainedSizes,
    SizesError,
    pretrained_sizes,
    resolve_arch,
    size_flags,
)
from ..corpora.text import input_file
from ..data.dictionary import MASK, DictionaryTask
from ..models.veco_transformer import TIED_LAYER_MODULES
from .keymap import InitReport, NmtInitError, init_nmt_state, parse_decoder_layers
from .vocab import target_dictionary

# veco-init-nmt's logger: its log lines read as they always have.
logger = logging.getLogger("veco_plugin.cli.init_nmt")

PLUGIN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TASK = "translation_from_pretrained_veco"


@dataclass(frozen=True)
class InitOptions:
    """What ``veco-init-nmt`` is asked to do (one field per flag)."""

    pretrained: str  # veco or fairseq XLM-R/RoBERTa checkpoint
    output: str  # checkpoint to write
    decoder_layers: str = "all"  # all, first:N, last:N or a list (parse_decoder_layers)
    arch: Optional[str] = None  # None: the arch of the checkpoint's sizes
    tie_layers: bool = False
    dict_path: Optional[str] = None  # None: found next to the checkpoint / in its data dir
    vocab_map: Optional[str] = None  # veco-reduce-vocab's vocab_map.tsv
    keep_output_bias: bool = False
    seed: int = 1  # for the modules that start random (XLM-R input)


def load_pretrained(path: str) -> Dict[str, Any]:
    """The fairseq checkpoint at ``path`` (a dict with a ``model`` state dict)."""
    from ..checkpoints.trusted_load import load_trusted

    try:
        state = load_trusted(path)
    except Exception as exc:  # corrupt or not a checkpoint
        from ..checkpoints.load_errors import not_a_checkpoint

        why = not_a_checkpoint(path) or f"cannot load ({exc})"
        raise NmtInitError(f"--pretrained {path}: {why}") from None
    if not isinstance(state, dict) or "model" not in state:
        raise NmtInitError(f"--pretrained {path} has no 'model' entry: not a fairseq checkpoint")
    return state


def checkpoint_sizes(path: str, state: Dict[str, Any]) -> PretrainedSizes:
    """:func:`pretrained_sizes` of the loaded ``state``; a checkpoint of another model (a
    translation checkpoint, veco-init-nmt's own output) names its path and model."""
    from ..checkpoints.load_errors import describe

    try:
        return pretrained_sizes(state["model"], checkpoint_model_cfg(state))
    except SizesError as exc:
        arch, task = describe(state)
        what = f"a {arch} model (task {task})" if arch != "?" else f"no encoder ({exc})"
        raise NmtInitError(
            f"--pretrained {path} holds {what}, not a pre-trained veco/XLM-R/RoBERTa "
            "encoder: give the checkpoint of fairseq-train --task veco_pretraining (or "
            "XLM-R's model.pt)"
        ) from None


def normalize_pretrained(
    model_state: Mapping[str, Tensor], sizes: PretrainedSizes, padding_idx: int
) -> Dict[str, Tensor]:
    """The layout upgrade ``--pretrained-xlmr`` uses (``upgrade_pretrained_state``), on a
    ``veco`` model of these sizes."""
    from ..models.veco import VecoModel, upgrade_pretrained_state

    dictionary = Dictionary()
    while len(dictionary) < sizes.rows:
        dictionary.add_symbol(f"<row{len(dictionary)}>")
    max_positions = sizes.position_rows - padding_idx - 1
    args = Namespace(
        encoder_layers=sizes.layers,
        encoder_embed_dim=sizes.dim,
        encoder_ffn_embed_dim=sizes.ffn,
        encoder_attention_heads=sizes.heads or 1,
        max_positions=max_positions,
    )
    model = VecoModel.build_model(args, DictionaryTask(dictionary, max_positions))
    return upgrade_pretrained_state(model, dict(model_state))


def model_flags(
    arch: str,
    sizes: Sequence[str],
    decoder_layers: int,
    tied: Optional[Sequence[int]],
    output_bias: bool = False,
) -> List[str]:
    """The model's fairseq-train flags: ``--arch``, sizes, decoder depth, tying, bias."""
    flags = ["--arch", arch, *sizes, "--decoder-layers", str(decoder_layers)]
    if tied:
        flags += ["--tie-decoder-to-encoder-layers", ",".join(map(str, tied))]
    if output_bias:
        flags.append("--decoder-output-bias")
    return flags


def build_target(
    flags: Sequence[str], dictionary: Dictionary, max_positions: int, data: str
) -> Tuple[BaseFairseqModel, Namespace]:
    """The ``veco_transformer`` model (and its args) exactly as fairseq-train builds it
    from ``flags`` (:func:`model_flags`)."""
    from fairseq import options
    from fairseq.models import ARCH_MODEL_REGISTRY

    argv = [
        data, "--user-dir", PLUGIN_DIR, "--task", TASK, *flags,
        "--max-source-positions", str(max_positions),
        "--max-target-positions", str(max_positions),
    ]  # fmt: skip
    args = options.parse_args_and_arch(options.get_training_parser(), argv)
    model = ARCH_MODEL_REGISTRY[args.arch].build_model(
        args, DictionaryTask(dictionary, max_positions)
    )
    return model, args


def check_tied(model: BaseFairseqModel, tied: Optional[Sequence[int]]) -> None:
    """Assert the weight sharing the checkpoint relies on: one embedding matrix (V, C)
    for source, target and output, and decoder layer j's ``TIED_LAYER_MODULES`` being
    encoder layer ``tied[j]``'s."""
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


def checkpoint_state(
    model: BaseFairseqModel, args: Namespace, report: InitReport, source: str
) -> Dict[str, Any]:
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


def train_flags(flags: Sequence[str], max_positions: int, output: str) -> str:
    """The fairseq-train flags that fine-tune from ``output`` (printed after DATA)."""
    words = [f"--user-dir {PLUGIN_DIR}", f"--task {TASK}", " ".join(flags)]
    if max_positions != 512:
        words.append(f"--max-source-positions {max_positions}")
        words.append(f"--max-target-positions {max_positions}")
    words.append(f"--restore-file {output} --reset-optimizer --reset-dataloader --reset-meters")
    return " ".join(words)


def log_report(report: InitReport, source: str) -> None:
    """What started random, what was dropped, and what the decoder predicts from."""
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


def write_init_checkpoint(options: InitOptions) -> Dict[str, Any]:
    """Initialize a ``veco_transformer`` from ``options.pretrained`` and write it to
    ``options.output``; returns the checkpoint written. Raises :class:`NmtInitError`
    (or ``VecoUserError``) with one line naming the file or flag and the fix."""
    from fairseq import utils as fairseq_utils

    fairseq_utils.import_user_module(Namespace(user_dir=PLUGIN_DIR))
    input_file(options.pretrained, "--pretrained", NmtInitError)
    check_output(options.output)
    for flag, path in (
        ("--pretrained", options.pretrained),
        ("--dict", options.dict_path),
        ("--vocab-map", options.vocab_map),
    ):
        if path and os.path.abspath(options.output) == os.path.abspath(path):
            raise NmtInitError(
                f"--output {options.output} is the {flag} file: writing the checkpoint would "
                "replace it; name another file"
            )
    state = load_pretrained(options.pretrained)
    sizes = checkpoint_sizes(options.pretrained, state)
    try:
        arch = resolve_arch(options.arch, sizes)
        arch_flags = size_flags(arch, sizes)
    except SizesError as exc:
        raise NmtInitError(str(exc)) from None
    layers = parse_decoder_layers(options.decoder_layers, sizes.layers)
    tied = layers if options.tie_layers else None

    target = target_dictionary(
        options.pretrained, state, sizes.rows, options.dict_path, options.vocab_map
    )
    dictionary = target.dictionary
    if target.keep_rows is None:
        logger.info("dictionary %s: %d types (with %s)", target.path, len(dictionary), MASK)
    max_positions = sizes.position_rows - dictionary.pad() - 1
    pretrained = normalize_pretrained(state["model"], sizes, dictionary.pad())
    torch.manual_seed(options.seed)  # the modules that start random
    data = os.path.dirname(
        os.path.abspath(options.vocab_map or options.dict_path or options.pretrained)
    )
    flags = model_flags(arch, arch_flags, len(layers), tied, options.keep_output_bias)
    model, train_args = build_target(flags, dictionary, max_positions, data)
    mapped, report = init_nmt_state(pretrained, model.state_dict(), layers, target.keep_rows)
    model.load_state_dict(mapped, strict=True)
    check_tied(model, tied)
    log_report(report, options.pretrained)

    out = checkpoint_state(model, train_args, report, options.pretrained)
    save_checkpoint(out, options.output)  # atomic: <output>.tmp, then rename
    logger.info(
        "wrote %s; fine-tune with: fairseq-train DATA %s",
        options.output, train_flags(flags, max_positions, options.output),
    )  # fmt: skip
    return out
