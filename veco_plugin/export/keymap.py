"""fairseq RoBERTa/XLM-R (and veco's plug-out encoder) -> transformers ``XLMRobertaForMaskedLM``.

One table per level (embeddings and LM head; each layer), each row ``fairseq name ->
transformers name``; every ``weight``/``bias`` of a row is mapped. What has no place in
transformers' model is dropped by :data:`DROPPED` (with its reason, logged); any other key
is an error, and so is a missing one. Quirks, one comment each:

* fairseq ties the LM head's output projection to the token embeddings
  (``encoder.lm_head.weight``); transformers ties ``lm_head.decoder.weight`` to
  ``roberta.embeddings.word_embeddings.weight`` and ``lm_head.decoder.bias`` to
  ``lm_head.bias``: the tie is asserted and both tied names are written.
* transformers adds token-type embeddings that RoBERTa does not have: one row of zeros
  (``type_vocab_size`` 1, as XLM-R's own conversion), so they add nothing.
"""

import logging
import re
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Tuple

import torch
from torch import Tensor

from ..errors import VecoUserError

logger = logging.getLogger(__name__)

ENCODER = "encoder.sentence_encoder."
HF_ENCODER = "roberta."

# fairseq module (under ``encoder.``) -> transformers module; weight and bias each
TOP_KEYS: Tuple[Tuple[str, str], ...] = (
    ("sentence_encoder.layernorm_embedding", "roberta.embeddings.LayerNorm"),
    ("lm_head.dense", "lm_head.dense"),
    ("lm_head.layer_norm", "lm_head.layer_norm"),
)

# single tensors (under ``encoder.``)
TOP_TENSORS: Tuple[Tuple[str, str], ...] = (
    ("sentence_encoder.embed_tokens.weight", "roberta.embeddings.word_embeddings.weight"),
    ("sentence_encoder.embed_positions.weight", "roberta.embeddings.position_embeddings.weight"),
    ("lm_head.bias", "lm_head.bias"),
)

# fairseq module of layer n (under ``encoder.sentence_encoder.layers.n.``) -> transformers
# module (under ``roberta.encoder.layer.n.``); weight and bias each
LAYER_KEYS: Tuple[Tuple[str, str], ...] = (
    ("self_attn.q_proj", "attention.self.query"),
    ("self_attn.k_proj", "attention.self.key"),
    ("self_attn.v_proj", "attention.self.value"),
    ("self_attn.out_proj", "attention.output.dense"),
    ("self_attn_layer_norm", "attention.output.LayerNorm"),
    ("fc1", "intermediate.dense"),
    ("fc2", "output.dense"),
    ("final_layer_norm", "output.LayerNorm"),
)

# (pattern, why it is not exported); matched against the whole key
DROPPED: Tuple[Tuple[str, str], ...] = (
    (r"encoder\.sentence_encoder\.layers\.\d+\.cross_attn(_layer_norm)?\..*", "cross-attention"),
    (r"pointer\..*", "dwa's pointer network"),
    (r"exchange\..*", "weam's word-exchange head"),
    (r"classification_heads\..*", "fine-tuning heads"),
    (r"(.*\.)?version", "fairseq's version buffers"),
)

# fairseq's LM output projection: the token embeddings (asserted), transformers ties its own
TIED_OUTPUT = "encoder.lm_head.weight"
TIED_TO = "encoder." + TOP_TENSORS[0][0]


@dataclass
class ExportReport:
    """What :func:`to_transformers` did with each fairseq key."""

    mapped: int = 0
    dropped: Dict[str, int] = field(default_factory=dict)  # reason -> tensors
    layers: int = 0

    def log(self) -> None:
        logger.info("mapped %d fairseq tensors of %d layers", self.mapped, self.layers)
        for reason, count in self.dropped.items():
            logger.info("dropped %s (%d tensors): not part of the plug-out encoder", reason, count)


def key_table(layers: int) -> Dict[str, str]:
    """Every fairseq key of an ``layers``-layer encoder -> its transformers key."""
    table = {"encoder." + f: h for f, h in TOP_TENSORS}
    for fairseq_module, hf_module in TOP_KEYS:
        for p in ("weight", "bias"):
            table[f"encoder.{fairseq_module}.{p}"] = f"{hf_module}.{p}"
    for n in range(layers):
        for fairseq_module, hf_module in LAYER_KEYS:
            for p in ("weight", "bias"):
                table[f"{ENCODER}layers.{n}.{fairseq_module}.{p}"] = (
                    f"{HF_ENCODER}encoder.layer.{n}.{hf_module}.{p}"
                )
    return table


def count_layers(keys: List[str]) -> int:
    """Layers of the encoder whose state has ``keys`` (highest ``layers.N`` + 1)."""
    found = [re.match(re.escape(ENCODER) + r"layers\.(\d+)\.", k) for k in keys]
    return 1 + max((int(m.group(1)) for m in found if m), default=-1)


def dropped_reason(key: str) -> str:
    """Why ``key`` is dropped, or ``""`` when it is not."""
    return next((why for pattern, why in DROPPED if re.fullmatch(pattern, key)), "")


def to_transformers(state: Mapping[str, Tensor]) -> Tuple[Dict[str, Tensor], ExportReport]:
    """The state dict of transformers' ``XLMRobertaForMaskedLM`` from a fairseq
    RoBERTa/XLM-R/veco model's (current layout: ``encoder.sentence_encoder.*``).

    Returns:
        the new state (float32, contiguous copies) and what was mapped and dropped.
    Raises:
        VecoUserError: on a key neither mapped nor dropped, a missing key, or an LM output
            projection that is not the token embeddings.
    """
    report = ExportReport(layers=count_layers(list(state)))
    table = key_table(report.layers)
    out: Dict[str, Tensor] = {}
    unexpected = []
    for key, value in state.items():
        if key in table:
            out[table[key]] = value.detach().float().clone().contiguous()
            report.mapped += 1
        elif key == TIED_OUTPUT:
            if TIED_TO in state and not torch.equal(value, state[TIED_TO]):
                raise VecoUserError(
                    f"{TIED_OUTPUT} differs from {TIED_TO}: transformers' XLM-R ties them; "
                    "an untied LM head cannot be exported"
                )
        elif dropped_reason(key):
            why = dropped_reason(key)
            report.dropped[why] = report.dropped.get(why, 0) + 1
        else:
            unexpected.append(key)
    if unexpected:
        raise VecoUserError(
            f"{len(unexpected)} tensors have no place in an XLM-R model (e.g. {unexpected[0]}): "
            "only post-LN RoBERTa/XLM-R-layout encoders export"
        )
    missing = sorted(set(table) - set(state))
    if missing:
        raise VecoUserError(f"{len(missing)} encoder tensors are missing (e.g. {missing[0]})")
    embeddings = out["roberta.embeddings.word_embeddings.weight"]  # (V, C)
    out["roberta.embeddings.token_type_embeddings.weight"] = embeddings.new_zeros(
        1, embeddings.size(1)
    )
    out["lm_head.decoder.weight"] = embeddings  # tied, as in fairseq
    out["lm_head.decoder.bias"] = out["lm_head.bias"]
    return out, report
