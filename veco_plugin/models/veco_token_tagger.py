"""VECO (or XLM-R) fine-tuned to tag every token, plug-out (H^L: XLM-R's zero-shot setting).

Built by the ``veco_tagging`` and ``veco_span_qa`` tasks from any ``veco`` arch. Its heads are
XTREME's (google-research/xtreme @ 838c13b, transformers @ cefd51c): dropout, then one
projection at every position (:class:`VecoTokenHead`, state-dict keys
``classification_heads.<name>.out_proj`` and ``.version``). A ``ca_mlm``/``tlm``/XLM-R
checkpoint restores into the model unchanged.

A head saved before version 2 (no ``version`` key) is RoBERTa's classification head read at
every position (dense, tanh, projection): loaded as such (:class:`VecoTokenClassificationHead`),
it scores as it did.
"""

import logging

import torch
from fairseq.models.roberta.model import RobertaClassificationHead
from fairseq.modules.transformer_sentence_encoder import init_bert_params
from torch import Tensor, nn

from .veco import VecoModel

logger = logging.getLogger(__name__)

HEADS = "classification_heads."
VERSION = 2  # the head's layout: 1 (no key) dense + tanh + projection, 2 dropout + projection


class VecoTokenHead(nn.Module):
    """XTREME's token heads: features (B, T, C) -> dropout -> projection -> logits (B, T, K).

    * tagging (``run_tag.py``: transformers' ``XLMRobertaForTokenClassification``): dropout
      at ``hidden_dropout_prob`` (0.1), then ``classifier`` (C -> tags);
    * QA (``run_squad.py:61``, ``third_party/roberta.py:688,713``): ``qa_outputs``
      (C -> 2: start, end), no dropout.

    The projection starts as transformers' ``init_weights`` starts it: N(0, 0.02), bias 0
    (fairseq's ``init_bert_params``).
    """

    def __init__(self, input_dim: int, num_classes: int, dropout: float) -> None:
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        self.out_proj = nn.Linear(input_dim, num_classes)
        self.out_proj.apply(init_bert_params)
        self.register_buffer("version", torch.tensor(VERSION))

    def forward(self, features: Tensor, **kwargs) -> Tensor:
        return self.out_proj(self.dropout(features))


class VecoTokenClassificationHead(RobertaClassificationHead):
    """The token head of layout 1 (checkpoints saved before version 2): RoBERTa's head at
    every position, features (B, T, C) -> logits (B, T, K)."""

    def forward(self, features: Tensor, **kwargs) -> Tensor:
        x = self.dropout(features)
        x = self.activation_fn(self.dense(x))
        return self.out_proj(self.dropout(x))


class VecoTokenTagger(VecoModel):
    """``forward(src_tokens, features_only=True, classification_head_name=name)`` ->
    ``(logits (B, T, K), extra)``: RoBERTa's forward, every head a token head."""

    def register_classification_head(self, name, num_classes=None, inner_dim=None, **kwargs):
        """XTREME's head (:class:`VecoTokenHead`), dropping out at ``--pooler-dropout``."""
        dim = self.args.encoder_embed_dim
        self.classification_heads[name] = VecoTokenHead(dim, num_classes, self.args.pooler_dropout)

    def register_layout_1_head(self, name: str, num_classes: int, inner_dim: int) -> None:
        """The head a checkpoint saved before version 2 holds (dense, tanh, projection), in
        place of the head ``name`` (RoBERTa's registration reads an old head's ``dense``)."""
        if name in self.classification_heads:
            del self.classification_heads[name]
        super().register_classification_head(name, num_classes, inner_dim)
        self.classification_heads[name].__class__ = VecoTokenClassificationHead

    def upgrade_state_dict_named(self, state_dict, name):
        """Each head of ``state_dict`` in its own layout. A layout-1 head (``dense``, no
        ``version``) is built as saved, in place of this model's head of that name. Version-2
        heads are kept out of RoBERTa's upgrade (it reads every head's ``dense``), then put
        back where this model has (or, with ``load_checkpoint_heads``, registers) a head of
        their name and class count; else dropped, as RoBERTa drops a head."""
        prefix = f"{name}." if name else ""
        names = {
            k[len(prefix + HEADS) :].split(".")[0]
            for k in state_dict
            if k.startswith(prefix + HEADS)
        }
        load_heads = getattr(self.args, "load_checkpoint_heads", False)
        kept = {}
        for head in sorted(names):
            keys = f"{prefix}{HEADS}{head}."
            mine = self.classification_heads[head] if head in self.classification_heads else None
            if f"{keys}version" not in state_dict:  # layout 1: RoBERTa's upgrade reads it
                if mine is not None or load_heads:
                    classes, inner = (
                        state_dict[f"{keys}{p}.weight"].size(0) for p in ("out_proj", "dense")
                    )
                    logger.info("token head %s: layout 1 (dense, tanh, projection), as saved", head)
                    self.register_layout_1_head(head, classes, inner)
                continue
            part = {k: state_dict.pop(k) for k in list(state_dict) if k.startswith(keys)}
            classes = part[f"{keys}out_proj.weight"].size(0)
            if mine is None and load_heads:
                self.register_classification_head(head, classes)
                mine = self.classification_heads[head]
            if mine is not None and mine.out_proj.out_features == classes:
                kept.update(part)
            else:
                logger.warning("dropping the checkpoint's token head %s (not this model's)", head)
        super().upgrade_state_dict_named(state_dict, name)
        state_dict.update(kept)
