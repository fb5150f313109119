"""VECO fine-tuned for sentence (pair) classification, plug-out or plug-in (paper §3.1).

Built by the ``veco_sentence_prediction`` task from any ``veco`` arch (same state-dict
layout as ``VecoModel`` plus RoBERTa's ``classification_heads.<name>.*``), so a
``ca_mlm``/``tlm``/XLM-R checkpoint restores into it unchanged.

* A **plug-out** head (``dense`` reads C features) is RoBERTa's: the forward is
  ``RobertaModel.forward`` and the head reads H^L at ``<s>``, exactly XLM-R's fine-tuning.
* A **plug-in** head (``dense`` reads 2C features) reads ``[H^L ; S^L]`` at ``<s>`` of
  both members of a translation pair (x, y): the two-stream request of ``VecoModel``
  gives H^L and S^L, S_x attending to H^L_y and S_y to H^L_x.
  Without a translation it falls back to plug-out (the paper's footnote 4: plug-in
  needs a bilingual pair) and reads ``[H^L ; H^L]``: S^L is the same stack as H^L plus
  the cross-attention sublayers, so with the cross-attention plugged out S^L *is* H^L,
  and ``[H^L ; H^L]`` is what the trained plug-in head sees of that network — no
  second head that training never updates (and DDP would see unused).
"""

import logging
from typing import Dict, Optional, Tuple

import torch
from fairseq.modules.transformer_sentence_encoder import init_bert_params
from torch import Tensor, nn

from ..modules.pair_layout import stack_pair
from .requests import Request, TwoStream
from .veco import VecoModel

logger = logging.getLogger(__name__)


class VecoSentenceClassifier(VecoModel):
    """``forward(src_tokens, classification_head_name=name, translation_tokens=None)``:

    * plug-out head -> RoBERTa's ``(logits (B, K), extra)``;
    * plug-in head, ``translation_tokens`` (B, T') given -> ``(logits (2B, K), extra)``,
      rows ``:B`` for x = ``src_tokens``, rows ``B:`` for y = ``translation_tokens``;
    * plug-in head without ``translation_tokens`` -> ``(logits (B, K), extra)`` of
      ``[H^L ; H^L]`` and a warning (logged once per model).

    ``plug_in_stop_gradient`` (default False: fine-tuning updates everything) is the
    two-stream request's ``stop_gradient``.
    """

    plug_in_stop_gradient = False

    def __init__(self, args, encoder):
        super().__init__(args, encoder)
        self._warned_fallback = False

    def register_classification_head(self, name, num_classes=None, inner_dim=None, **kwargs):
        """RoBERTa's head (XTREME's: ``XLMRobertaForSequenceClassification``'s dropout,
        dense, tanh, dropout, projection), started as transformers' ``init_weights`` starts
        it: N(0, 0.02), biases 0 (fairseq's ``init_bert_params``; fairseq's RoBERTa leaves
        torch's default). ``plug_in=True`` makes its ``dense`` read 2C features."""
        plug_in = kwargs.pop("plug_in", False)
        super().register_classification_head(name, num_classes, inner_dim, **kwargs)
        head = self.classification_heads[name]
        if plug_in:
            head.dense = nn.Linear(2 * self.args.encoder_embed_dim, head.dense.out_features)
        head.apply(init_bert_params)

    def is_plug_in(self, name: str) -> bool:
        return self.classification_heads[name].dense.in_features == 2 * self.args.encoder_embed_dim

    def forward(
        self,
        src_tokens: Optional[Tensor] = None,
        features_only: bool = False,
        return_all_hiddens: bool = False,
        classification_head_name: Optional[str] = None,
        requests: Optional[Dict[str, Request]] = None,
        translation_tokens: Optional[Tensor] = None,
        **kwargs,
    ):
        name = classification_head_name
        if requests is not None or name is None or not self.is_plug_in(name):
            return super().forward(
                src_tokens, features_only, return_all_hiddens, name, requests, **kwargs
            )
        head = self.classification_heads[name]
        assert src_tokens is not None
        if translation_tokens is None:
            self._warn_fallback(name)
            h, extra = super().forward(src_tokens, True, return_all_hiddens, None, **kwargs)
            return head(torch.cat([h, h], dim=-1)), extra  # (B, T, 2C) -> (B, K)
        h, s = self.plug_in_features(src_tokens, translation_tokens)
        return head(torch.cat([h, s], dim=-1)), {}  # (2B, T, 2C) -> (2B, K)

    def plug_in_features(self, x: Tensor, y: Tensor) -> Tuple[Tensor, Tensor]:
        """H^L, S^L (2B, T, C) of the pairs (x, y), x's rows first."""
        pair = stack_pair(x, y, self.encoder.dictionary.pad())
        request = TwoStream(
            pair,
            features=True,
            need_h=False,
            need_s=False,
            stop_gradient=self.plug_in_stop_gradient,
        )
        out = super().forward(requests={"pair": request})["pair"]
        return out.h, out.s

    def _warn_fallback(self, name: str) -> None:
        if not self._warned_fallback:
            logger.warning(
                "plug-in head %s got no translation: falling back to plug-out, the head "
                "reads [H^L ; H^L] (cross-attention unplugged, S^L = H^L)",
                name,
            )
            self._warned_fallback = True
