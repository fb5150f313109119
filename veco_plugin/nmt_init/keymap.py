"""Pure initializers: a pre-trained ``veco`` state dict -> a ``veco_transformer`` one.

Paper §3.2 and Figure 3 (NLG fine-tuning): "the self-attention module is used to
initialize both the corresponding modules in the encoder and decoder for contextual
modeling, while the cross-attention module is used to initialize the
encoder-to-decoder attention". With a post-LN stack and no future mask, a decoder
layer is then exactly the pre-trained plug-in layer (eqs. 6-9) and the encoder the
plug-out stack (eqs. 2-5), so the initialized model reproduces both streams.

The key map (:func:`nmt_module_map`) is explicit, at module level::

    encoder.embed_tokens / decoder.embed_tokens / decoder.output_projection
                                        <- encoder.sentence_encoder.embed_tokens
    {encoder,decoder}.embed_positions   <- encoder.sentence_encoder.embed_positions
    {encoder,decoder}.layernorm_embedding
                                        <- encoder.sentence_encoder.layernorm_embedding
    encoder.layers.i.M                  <- encoder.sentence_encoder.layers.i.M
    decoder.layers.j.M                  <- encoder.sentence_encoder.layers.L[j].M
    decoder.layers.j.encoder_attn       <- encoder.sentence_encoder.layers.L[j].cross_attn
    decoder.layers.j.encoder_attn_layer_norm
                            <- encoder.sentence_encoder.layers.L[j].cross_attn_layer_norm

with M in :data:`LAYER_MODULES` and L the decoder source layers
(:func:`parse_decoder_layers`), and one parameter (:data:`PARAMETER_MAP`)::

    decoder.output_projection.bias      <- encoder.lm_head.bias

when the model has it (``--decoder-output-bias``). The rest of the pre-training LM head
(``encoder.lm_head.dense``, GELU, ``encoder.lm_head.layer_norm``: the transform between
the last layer and the tied output embeddings), classification heads and XLM-Align's
pointer network (``dwa``) and WEAM's exchange head (``weam``) are dropped:
the decoder predicts from the tied embeddings directly, so its logits at
initialization are not the pre-trained LM's. :func:`init_nmt_state` fails on a target weight
without a source (missing) and on a source weight the map does not know
(unexpected); the only modules allowed to start random are the encoder-decoder
attentions when the input is a plain XLM-R/RoBERTa checkpoint (it has no
cross-attention: the paper's XLM-R baseline row of Table 3).

Functions here do no I/O and do not mutate their inputs; :mod:`.writer` loads, builds
and saves.
"""

from collections import OrderedDict
from dataclasses import dataclass
from typing import Container, Dict, List, Mapping, Optional, Sequence, Set, Tuple

import torch
from torch import Tensor

from ..models.layer_spec import count_layers, layer_list_problem, parse_layer_list
from ..models.veco_transformer import DIGEST_KEY, TIED_LAYER_MODULES

SOURCE = "encoder.sentence_encoder"
# A pre-trained layer's self-attention/FFN block: copied into encoder and decoder layers
# (and shared between them with --tie-layers: the model's tied modules).
LAYER_MODULES = TIED_LAYER_MODULES
# decoder layer module <- pre-trained layer module (plug-in block)
CROSS_MODULES = (
    ("encoder_attn", "cross_attn"),
    ("encoder_attn_layer_norm", "cross_attn_layer_norm"),
)
EMBEDDING_MODULES = ("embed_tokens", "embed_positions", "layernorm_embedding")
# Target keys whose first dimension is the vocabulary (resized by ``vocab_rows``).
VOCAB_KEYS = (
    "encoder.embed_tokens.weight",
    "decoder.embed_tokens.weight",
    "decoder.output_projection.weight",
    "decoder.output_projection.bias",
)
# Single parameters mapped outside the module map: target key <- source key.
PARAMETER_MAP = {"decoder.output_projection.bias": "encoder.lm_head.bias"}
# Source modules deliberately not carried over.
DROPPED_SOURCE_PREFIXES = (
    "encoder.lm_head.",
    "classification_heads.",
    "pointer.",
    "exchange.",
)
# Buffers that are not weights: the source's are ignored, the target's kept fresh.
SOURCE_BUFFERS = (f"{SOURCE}.version",)
TARGET_BUFFERS = ("encoder.version", "decoder.version", DIGEST_KEY)


class NmtInitError(ValueError):
    """Bad input to the initializer, reported to the user as one line."""


@dataclass(frozen=True)
class InitReport:
    """What :func:`init_nmt_state` did, for the log."""

    source_kind: str  # "veco" or "xlmr" (no cross-attention in the checkpoint)
    decoder_source_layers: Tuple[int, ...]
    random_modules: Tuple[str, ...]  # target modules left at their fresh initialization
    dropped_modules: Tuple[str, ...]  # source modules not used by the target
    kept_output_bias: bool = False  # decoder.output_projection.bias <- encoder.lm_head.bias


def parse_decoder_layers(spec: str, num_layers: int) -> List[int]:
    """The pre-trained layer that initializes each decoder layer.

    ``spec`` is ``all``, ``first:N``, ``last:N`` (paper Table 4: last is better) or an
    explicit comma-separated list such as ``18,19,20,21,22,23``; ``num_layers`` is the
    pre-trained depth. A single number is refused as ambiguous (fairseq-train's
    ``--decoder-layers 6`` is a depth; ``6,`` is the list of one layer). Raises
    :class:`NmtInitError` (one line) when out of range.
    """
    text = spec.strip().lower()
    if text == "all":
        return list(range(num_layers))
    if text.startswith(("first:", "last:")):
        which, _, count = text.partition(":")
        try:
            n = int(count)
        except ValueError:
            raise NmtInitError(
                f"--decoder-layers {spec!r}: N in {which}:N must be an integer"
            ) from None
        if not 1 <= n <= num_layers:
            raise NmtInitError(
                f"--decoder-layers {spec!r}: N must be between 1 and the pre-trained "
                f"depth {num_layers}"
            )
        return list(range(n)) if which == "first" else list(range(num_layers - n, num_layers))
    if text.isdigit():  # one index, or a depth as fairseq-train's --decoder-layers takes it?
        raise NmtInitError(
            f"--decoder-layers {spec!r} is ambiguous: for N decoder layers write last:N (or "
            f"first:N), N >= 1; for one decoder layer from pre-trained layer {text} write "
            f"'{text},'"
        )
    try:
        layers = parse_layer_list(text)
    except ValueError:
        raise NmtInitError(
            f"--decoder-layers {spec!r}: expected all, first:N, last:N or a list like 18,19,20"
        ) from None
    if not layers:
        raise NmtInitError(f"--decoder-layers {spec!r}: no layers given")
    problem = layer_list_problem(layers, num_layers, "the pre-trained model")
    if problem:
        raise NmtInitError(f"--decoder-layers {spec!r}: {problem}")
    return layers


def source_kind(pretrained: Mapping[str, Tensor]) -> str:
    """``"veco"`` when the checkpoint has cross-attention, else ``"xlmr"``."""
    return "veco" if any(".cross_attn." in k for k in pretrained) else "xlmr"


def nmt_module_map(
    num_encoder_layers: int, decoder_source_layers: Sequence[int]
) -> "OrderedDict[str, str]":
    """Target module -> source module (the whole initialization, explicitly)."""
    m: "OrderedDict[str, str]" = OrderedDict()
    for side in ("encoder", "decoder"):
        for name in EMBEDDING_MODULES:
            m[f"{side}.{name}"] = f"{SOURCE}.{name}"
    m["decoder.output_projection"] = f"{SOURCE}.embed_tokens"
    for i in range(num_encoder_layers):
        for name in LAYER_MODULES:
            m[f"encoder.layers.{i}.{name}"] = f"{SOURCE}.layers.{i}.{name}"
    for j, i in enumerate(decoder_source_layers):
        for name in LAYER_MODULES:
            m[f"decoder.layers.{j}.{name}"] = f"{SOURCE}.layers.{i}.{name}"
        for target, source in CROSS_MODULES:
            m[f"decoder.layers.{j}.{target}"] = f"{SOURCE}.layers.{i}.{source}"
    return m


def _split(key: str, modules: Container[str]) -> Tuple[Optional[str], str]:
    """``decoder.layers.0.self_attn.k_proj.weight`` -> (``decoder.layers.0.self_attn``,
    ``k_proj.weight``) for the longest module prefix in ``modules``."""
    parts = key.split(".")
    for n in range(len(parts) - 1, 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in modules:
            return prefix, ".".join(parts[n:])
    return None, key


def init_nmt_state(
    pretrained: Mapping[str, Tensor],
    fresh: Mapping[str, Tensor],
    decoder_source_layers: Sequence[int],
    vocab_rows: Optional[Sequence[int]] = None,
) -> Tuple[Dict[str, Tensor], InitReport]:
    """Map a pre-trained state dict onto a freshly built ``veco_transformer``'s.

    Args:
        pretrained: ``veco`` (or XLM-R/RoBERTa) state dict in fairseq's current layout
            (``encoder.sentence_encoder.*``, ``encoder.lm_head.*``)
        fresh: the target model's ``state_dict()`` (names, shapes, and the values of
            modules allowed to start random and of buffers)
        decoder_source_layers: pre-trained layer for each decoder layer (len = decoder depth)
        vocab_rows: keep only these embedding rows, in this order (``veco-reduce-vocab``):
            new row r is old row ``vocab_rows[r]``; None keeps all
    Returns:
        ``(state, report)``: a new state dict with exactly ``fresh``'s keys and shapes.
    Raises:
        NmtInitError: missing or unexpected keys, layer counts or shapes that differ.
    """
    src_layers = count_layers(pretrained, f"{SOURCE}.layers")
    enc_layers = count_layers(fresh, "encoder.layers")
    dec_layers = count_layers(fresh, "decoder.layers")
    if f"{SOURCE}.embed_tokens.weight" not in pretrained:
        raise NmtInitError(f"no {SOURCE}.embed_tokens.weight: not a veco/XLM-R/RoBERTa state dict")
    if src_layers != enc_layers:
        raise NmtInitError(
            f"the checkpoint has {src_layers} layers but the model's encoder {enc_layers}: "
            "pick the --arch of the pre-trained size"
        )
    if dec_layers != len(decoder_source_layers):
        raise NmtInitError(
            f"{len(decoder_source_layers)} decoder source layers for a "
            f"{dec_layers}-layer decoder"
        )
    problem = layer_list_problem(decoder_source_layers, src_layers, "the checkpoint", unique=False)
    if problem:
        raise NmtInitError(f"decoder source layers: {problem}")
    kind = source_kind(pretrained)
    modules = nmt_module_map(enc_layers, decoder_source_layers)
    cross_targets = {t for t, _ in CROSS_MODULES}
    rows = None
    if vocab_rows is not None:
        n_src = pretrained[f"{SOURCE}.embed_tokens.weight"].size(0)
        rows = torch.as_tensor(list(vocab_rows), dtype=torch.long)
        if rows.numel() == 0 or int(rows.min()) < 0 or int(rows.max()) >= n_src:
            raise NmtInitError(
                f"the vocabulary map refers to rows outside the checkpoint's 0-{n_src - 1}"
            )

    state: Dict[str, Tensor] = OrderedDict()
    used: Set[str] = set()
    missing: List[str] = []
    random: Set[str] = set()
    for key, value in fresh.items():
        if key in TARGET_BUFFERS:
            state[key] = value.clone()
            continue
        module, suffix = _split(key, modules)
        if key in PARAMETER_MAP:
            module, source_key = key, PARAMETER_MAP[key]
        elif module is None:
            raise NmtInitError(f"the key map has no source for the model's {key}")
        else:
            source_key = f"{modules[module]}.{suffix}"
        if source_key not in pretrained:
            if kind == "xlmr" and module.rsplit(".", 1)[-1] in cross_targets:
                state[key] = value.clone()
                random.add(module)
            else:
                missing.append(f"{key} <- {source_key}")
            continue
        weight = pretrained[source_key]
        used.add(source_key)
        if rows is not None and key in VOCAB_KEYS:
            weight = weight.index_select(0, rows)
        if weight.shape != value.shape:
            raise NmtInitError(
                f"{source_key} has shape {tuple(weight.shape)} but the model's {key} "
                f"{tuple(value.shape)}: pick the --arch (and positions) of the checkpoint"
            )
        state[key] = weight.detach().clone()
    if missing:
        raise NmtInitError(
            f"{len(missing)} model weights are missing from the checkpoint, e.g. {missing[0]}"
        )

    known = dict.fromkeys(nmt_module_map(src_layers, range(src_layers)).values())
    known.update((p.rstrip("."), None) for p in DROPPED_SOURCE_PREFIXES)
    unexpected: List[str] = []
    dropped: Set[str] = set()
    for key in pretrained:
        if key in SOURCE_BUFFERS or key in used:
            continue
        module, _ = _split(key, known)
        if module is None:
            unexpected.append(key)
        else:
            dropped.add(module)
    if unexpected:
        raise NmtInitError(
            f"{len(unexpected)} checkpoint weights have no place in the model, e.g. "
            f"{unexpected[0]}: is it a veco/XLM-R/RoBERTa checkpoint?"
        )
    report = InitReport(
        source_kind=kind,
        decoder_source_layers=tuple(decoder_source_layers),
        random_modules=tuple(sorted(random)),
        dropped_modules=tuple(sorted(dropped)),
        kept_output_bias=PARAMETER_MAP["decoder.output_projection.bias"] in used,
    )
    return state, report
