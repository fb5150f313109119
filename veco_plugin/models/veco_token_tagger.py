"""VECO (or XLM-R) fine-tuned to tag every token, plug-out (H^L: XLM-R's zero-shot setting).

Built by the ``veco_tagging`` task from any ``veco`` arch. Its heads are RoBERTa's
classification heads applied at every position instead of at ``<s>``: the same modules
and state-dict keys (``classification_heads.<name>.dense`` / ``.out_proj``), so RoBERTa's
``upgrade_state_dict_named`` re-registers a saved head with its saved size, and a
``ca_mlm``/``tlm``/XLM-R checkpoint restores into the model unchanged.
"""

from fairseq.models.roberta.model import RobertaClassificationHead
from torch import Tensor

from .veco import VecoModel


class VecoTokenClassificationHead(RobertaClassificationHead):
    """RoBERTa's head at every position: features (B, T, C) -> logits (B, T, K)."""

    def forward(self, features: Tensor, **kwargs) -> Tensor:
        x = self.dropout(features)
        x = self.activation_fn(self.dense(x))
        return self.out_proj(self.dropout(x))


class VecoTokenTagger(VecoModel):
    """``forward(src_tokens, features_only=True, classification_head_name=name)`` ->
    ``(logits (B, T, K), extra)``: RoBERTa's forward, every head a token head."""

    def register_classification_head(self, name, num_classes=None, inner_dim=None, **kwargs):
        super().register_classification_head(name, num_classes, inner_dim, **kwargs)
        # the head RoBERTa built (its sizes, dropout, activation), read at every token
        self.classification_heads[name].__class__ = VecoTokenClassificationHead
