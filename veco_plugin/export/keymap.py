"""fairseq RoBERTa/XLM-R (and veco's plug-out encoder) <-> transformers' XLM-R.

One table per level (embeddings and LM head; each layer), each row ``fairseq name ->
transformers name``; every ``weight``/``bias`` of a row is mapped. The table is read both
ways: :func:`to_transformers` (export) and :func:`from_transformers` (import).

Export: what has no place in transformers' model is dropped by :data:`DROPPED` (with its
reason, logged); any other key is an error, and so is a missing one. Quirks, one comment
each:

* fairseq ties the LM head's output projection to the token embeddings
  (``encoder.lm_head.weight``); transformers ties ``lm_head.decoder.weight`` to
  ``roberta.embeddings.word_embeddings.weight`` and ``lm_head.decoder.bias`` to
  ``lm_head.bias``: the tie is asserted and both tied names are written.
* transformers adds token-type embeddings that RoBERTa does not have: one row of zeros
  (``type_vocab_size`` 1, as XLM-R's own conversion), so they add nothing.

Import (``XLMRobertaForMaskedLM``, ``XLMRobertaModel``, ``XLMRobertaForSequenceClassification``):
the same table backwards, :data:`HF_DROPPED` dropped with its reason, any other key an error,
and so is a missing one, except the whole LM head of a model that has none. Quirks:

* ``XLMRobertaModel`` saves its keys without the ``roberta.`` prefix: it is added.
* transformers adds ``token_type_embeddings[token_type_ids]`` (ids 0 unless given) to every
  token, as it adds the position embedding: the one row is folded into every row of the
  position table, which fairseq adds to every token (padding included). More than one
  type has no fairseq counterpart and is refused.
* the tied ``lm_head.decoder.weight``/``.bias`` (written by older transformers) must equal
  what they are tied to.
* the sequence-classification head (dense, tanh, out_proj on ``<s>``) is fairseq's
  ``RobertaClassificationHead``: kept as ``classification_heads.NAME``.
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


# transformers keys that are not imported (pattern, why); matched against the whole key
HF_DROPPED: Tuple[Tuple[str, str], ...] = (
    (r"roberta\.pooler\.dense\.(weight|bias)", "XLMRobertaModel's pooler (fairseq has none)"),
    (r"roberta\.embeddings\.position_ids", "transformers' position-id buffer"),
)

# transformers' tied copies (older versions save them): tied name -> what it must equal
HF_TIED: Dict[str, str] = {
    "lm_head.decoder.weight": "roberta.embeddings.word_embeddings.weight",
    "lm_head.decoder.bias": "lm_head.bias",
}
TOKEN_TYPES = "roberta.embeddings.token_type_embeddings.weight"
# XLMRobertaForSequenceClassification's head -> classification_heads.NAME.(dense|out_proj).*
HF_CLASSIFIER = re.compile(r"classifier\.((dense|out_proj)\.(weight|bias))")
LM_HEAD = "encoder.lm_head."


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


@dataclass
class ImportReport:
    """What :func:`from_transformers` did with each transformers key."""

    mapped: int = 0
    layers: int = 0
    dropped: Dict[str, int] = field(default_factory=dict)  # reason -> tensors
    head: bool = True  # the model had an LM head (else fairseq's starts fresh)
    classes: int = 0  # outputs of the kept classification head (0: none)
    token_types_folded: float = 0.0  # max |type row| added to the position table

    def log(self, head_name: str) -> None:
        logger.info("mapped %d transformers tensors of %d layers", self.mapped, self.layers)
        for reason, count in self.dropped.items():
            logger.info("dropped %s (%d tensors)", reason, count)
        if self.token_types_folded:
            logger.info(
                "folded the token-type embedding (max |w| %.3g) into the position table",
                self.token_types_folded,
            )
        if self.classes:
            logger.info(
                "kept the sequence-classification head (%d classes) as " "classification_heads.%s",
                self.classes,
                head_name,
            )
        if not self.head:
            logger.warning(
                "!!! the model has NO LM HEAD (XLMRobertaModel): fairseq's lm_head.dense and "
                "lm_head.layer_norm start from fairseq's initialization, lm_head.bias zero "
                "(the output projection is tied to the embeddings, as always): its MLM "
                "logits are untrained; the encoder's features are the model's"
            )


def _with_prefix(state: Mapping[str, Tensor]) -> Dict[str, Tensor]:
    """``state`` with ``XLMRobertaModel``'s unprefixed keys under ``roberta.``."""
    bare = ("embeddings.", "encoder.", "pooler.")
    return {(HF_ENCODER + k if k.startswith(bare) else k): v for k, v in state.items()}


def _hf_layers(keys: List[str]) -> int:
    found = [re.match(re.escape(HF_ENCODER) + r"encoder\.layer\.(\d+)\.", k) for k in keys]
    return 1 + max((int(m.group(1)) for m in found if m), default=-1)


def from_transformers(
    state: Mapping[str, Tensor], head_name: str = "sentence_classification_head"
) -> Tuple[Dict[str, Tensor], ImportReport]:
    """A fairseq RoBERTa/XLM-R state (current layout, float32) from transformers' XLM-R.

    Args:
        state: the weights of ``XLMRobertaForMaskedLM``, ``XLMRobertaModel`` or
            ``XLMRobertaForSequenceClassification``.
        head_name: the fairseq name of a sequence-classification head.
    Returns:
        the fairseq tensors (the LM output projection tied to the token embeddings; no
        version buffers; for a model without an LM head, no ``encoder.lm_head.*`` but that
        projection) and the report.
    Raises:
        VecoUserError: on a key neither mapped nor dropped, a missing key, a tied copy that
            differs, or more than one token type.
    """
    state = _with_prefix(state)
    report = ImportReport(layers=_hf_layers(list(state)))
    table = {h: f for f, h in key_table(report.layers).items()}
    if not any(k.startswith("lm_head.") for k in state):
        report.head = False
        table = {h: f for h, f in table.items() if not f.startswith(LM_HEAD)}
    out: Dict[str, Tensor] = {}
    unexpected = []
    for key, value in state.items():
        why = next((w for pattern, w in HF_DROPPED if re.fullmatch(pattern, key)), "")
        if key in table:
            out[table[key]] = value.detach().float().clone().contiguous()
            report.mapped += 1
        elif key in HF_TIED:
            tied = HF_TIED[key]
            if tied in state and not torch.equal(value, state[tied]):
                raise VecoUserError(
                    f"{key} differs from {tied}: fairseq's RoBERTa ties them; an untied LM "
                    "head cannot be imported"
                )
        elif HF_CLASSIFIER.fullmatch(key):
            name = HF_CLASSIFIER.sub(rf"classification_heads.{head_name}.\1", key)
            out[name] = value.detach().float().clone().contiguous()
            report.mapped += 1
        elif why:
            report.dropped[why] = report.dropped.get(why, 0) + 1
        elif key != TOKEN_TYPES:
            unexpected.append(key)
    if unexpected:
        raise VecoUserError(
            f"{len(unexpected)} tensors have no place in a fairseq XLM-R model (e.g. "
            f"{unexpected[0]}): only XLMRobertaForMaskedLM, XLMRobertaModel and "
            "XLMRobertaForSequenceClassification import"
        )
    missing = sorted(set(table) - set(state))
    if missing:
        raise VecoUserError(f"{len(missing)} encoder tensors are missing (e.g. {missing[0]})")
    classifier = f"classification_heads.{head_name}.out_proj.weight"
    report.classes = int(out[classifier].size(0)) if classifier in out else 0
    if TOKEN_TYPES in state:
        _fold_token_types(out, state[TOKEN_TYPES].detach().float(), report)
    out[TIED_OUTPUT] = out[TIED_TO]  # fairseq's tie, whatever transformers saved
    return out, report


def _fold_token_types(out: Dict[str, Tensor], types: Tensor, report: ImportReport) -> None:
    """Add the one token-type row ``types: (1, C)`` to every row of the position table
    ``(P, C)``: transformers computes word + type + position at every token."""
    if types.size(0) != 1:
        raise VecoUserError(
            f"{TOKEN_TYPES} has {types.size(0)} token types: fairseq's RoBERTa has none "
            "(only a one-type model, as every XLM-R, imports)"
        )
    positions = "encoder." + TOP_TENSORS[1][0]
    out[positions] = out[positions] + types
    report.token_types_folded = float(types.abs().max())
