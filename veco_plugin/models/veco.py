"""``veco``: an XLM-R-layout encoder whose layers carry a pluggable cross-attention.

State-dict layout is RoBERTa/XLM-R's (``encoder.sentence_encoder.*``,
``encoder.lm_head.*``) plus ``layers.N.cross_attn.*`` and
``layers.N.cross_attn_layer_norm.*``, so a fairseq XLM-R checkpoint loads with only
the cross-attention missing.
"""

import logging
from typing import Dict, Optional, Tuple

import torch
from fairseq.models import register_model, register_model_architecture
from fairseq.models.roberta import RobertaEncoder, RobertaModel
from fairseq.models.roberta.model import base_architecture as roberta_base_architecture
from fairseq.modules.transformer_sentence_encoder import init_bert_params
from fairseq.utils import safe_getattr, safe_hasattr
from torch import Tensor

from ..modules.veco_transformer_encoder import VecoTransformerEncoder, reset_positions

logger = logging.getLogger(__name__)


class VecoEncoder(RobertaEncoder):
    """RoBERTa encoder (embeddings, layers, tied LM head) built from VECO layers."""

    def build_encoder(self, args, dictionary, embed_tokens):
        encoder = VecoTransformerEncoder(args, dictionary, embed_tokens)
        encoder.apply(init_bert_params)
        return encoder


@register_model("veco")
class VecoModel(RobertaModel):
    """``forward`` is RoBERTa's (plug-out); ``forward_two_stream`` gives the H and S
    streams CA-MLM needs; ``forward_concat`` is the TLM input path."""

    @staticmethod
    def add_args(parser):
        RobertaModel.add_args(parser)

    @classmethod
    def build_model(cls, args, task):
        veco_base_architecture(args)
        if not safe_hasattr(args, "max_positions"):
            args.max_positions = task.max_positions()
        return cls(args, VecoEncoder(args, task.source_dictionary))

    @property
    def sentence_encoder(self) -> VecoTransformerEncoder:
        return self.encoder.sentence_encoder

    def forward_two_stream(
        self,
        pair_tokens: Tensor,
        masked_tokens: Optional[Tensor] = None,
        stop_gradient: bool = True,
        need_h: bool = True,
        need_s: bool = True,
    ) -> Tuple[Optional[Tensor], Optional[Tensor]]:
        """H- and S-stream LM logits for a stacked batch of pairs.

        Args:
            pair_tokens: (2B, T): rows ``:B`` are x̂, rows ``B:`` the paired ŷ
            masked_tokens: (2B, T) bool; logits only where True (all if None)
            stop_gradient: treat H^L as a constant in the cross terms (paper §2.2)
            need_h / need_s: which logits to compute (the other is None)
        Returns:
            ``(h_logits, s_logits)``: (M, V) each, M = masked positions in row-major
            order (x's before y's); (2B, T, V) when ``masked_tokens`` is None.
            h gives P(x|x̂), P(y|ŷ) (eqs. 10-11); s gives P(x|ŷ,x̂), P(y|x̂,ŷ) (eqs. 12-13).
        """
        encoder = self.sentence_encoder
        # Without H logits and with the stop-gradient, nothing back-propagates into H.
        with torch.set_grad_enabled(torch.is_grad_enabled() and (need_h or not stop_gradient)):
            h = encoder(pair_tokens)["encoder_out"][0]  # (T, 2B, C)
        h_logits = s_logits = None
        if need_h:
            h_logits = self.encoder.output_layer(h.transpose(0, 1), masked_tokens)
        if need_s:
            # S_x attends to H^L_y and S_y to H^L_x: swap the two halves of the batch.
            memory = swap_halves(h.detach() if stop_gradient else h, dim=1)
            memory_padding_mask = swap_halves(pair_tokens.eq(encoder.padding_idx), dim=0)
            s = encoder.forward_stream(pair_tokens, memory, memory_padding_mask)
            s_logits = self.encoder.output_layer(s.transpose(0, 1), masked_tokens)
        return h_logits, s_logits

    def forward_concat(
        self,
        tokens: Tensor,
        first_lengths: Optional[Tensor] = None,
        masked_tokens: Optional[Tensor] = None,
    ) -> Tensor:
        """Plug-out LM logits over concatenated pairs ``x ‖ y`` (B, T) -> (M, V).

        With ``first_lengths`` (B,) the positions of y restart at 0 (XLM's TLM);
        without, positions run on across the pair (VECO's default)."""
        if first_lengths is None:
            logits, _ = self.encoder(tokens, masked_tokens=masked_tokens)
            return logits
        encoder = self.sentence_encoder
        positions = reset_positions(tokens, first_lengths, encoder.padding_idx)
        features = encoder.forward_stream(tokens, positions=positions).transpose(0, 1)
        return self.encoder.output_layer(features, masked_tokens)

    def cross_attention_parameters(self):
        return self.sentence_encoder.cross_attention_parameters()


def swap_halves(x: Tensor, dim: int) -> Tensor:
    """[a; b] -> [b; a] along ``dim`` (whose size is even)."""
    first, second = x.chunk(2, dim=dim)
    return torch.cat([second, first], dim=dim)


# (layers, hidden, FFN, heads) per size name; veco_transformer archs use the same table.
ARCH_SIZES = {
    "tiny": (2, 64, 256, 4),  # CPU tests
    "small": (6, 768, 3072, 12),  # paper Table 8
    "base": (12, 768, 3072, 12),  # XLM-R base
    "large": (24, 1024, 4096, 16),  # paper Table 8
}


def fill_encoder_sizes(args, size: str) -> None:
    """Default the encoder sizes of ``size``; values the user passed are kept."""
    layers, dim, ffn, heads = ARCH_SIZES[size]
    args.encoder_layers = safe_getattr(args, "encoder_layers", layers)
    args.encoder_embed_dim = safe_getattr(args, "encoder_embed_dim", dim)
    args.encoder_ffn_embed_dim = safe_getattr(args, "encoder_ffn_embed_dim", ffn)
    args.encoder_attention_heads = safe_getattr(args, "encoder_attention_heads", heads)


def veco_base_architecture(args):
    """XLM-R base: 12 layers, 768 hidden, 3072 FFN, 12 heads, post-LN, GELU."""
    roberta_base_architecture(args)


@register_model_architecture("veco", "veco_base")
def veco_base(args):
    veco_base_architecture(args)


@register_model_architecture("veco", "veco_tiny")
def veco_tiny(args):
    fill_encoder_sizes(args, "tiny")
    veco_base_architecture(args)


@register_model_architecture("veco", "veco_small")
def veco_small(args):
    fill_encoder_sizes(args, "small")
    veco_base_architecture(args)


@register_model_architecture("veco", "veco_large")
def veco_large(args):
    fill_encoder_sizes(args, "large")
    veco_base_architecture(args)


# Keys of a fairseq XLM-R/RoBERTa state dict that VECO does not have a use for.
_XLMR_EXTRA_PREFIXES = ("classification_heads.",)


def load_xlmr_into_veco(model: VecoModel, state: Dict[str, Tensor], source: str) -> None:
    """Copy every XLM-R/RoBERTa weight into ``model``; only cross-attention stays random.

    Fails on a vocabulary or shape mismatch and on unexpected keys."""
    own = model.state_dict()
    extra = [
        k
        for k in state
        if k not in own and not k.startswith(_XLMR_EXTRA_PREFIXES) and not k.endswith("version")
    ]
    if extra:
        raise ValueError(
            f"{source}: {len(extra)} keys have no place in a veco model (e.g. {extra[0]}): "
            "is it a fairseq RoBERTa/XLM-R checkpoint of the same layer count?"
        )
    emb = "encoder.sentence_encoder.embed_tokens.weight"
    if state[emb].shape != own[emb].shape:
        raise ValueError(
            f"{source}: embeddings {tuple(state[emb].shape)} but the task dictionary gives "
            f"{tuple(own[emb].shape)}: binarize with the checkpoint's dict.txt "
            "(fairseq-preprocess --srcdict CKPT_DIR/dict.txt) and the same --arch sizes"
        )
    for k, v in state.items():
        if k in own and own[k].shape != v.shape:
            raise ValueError(
                f"{source}: {k} has shape {tuple(v.shape)}, the --arch gives "
                f"{tuple(own[k].shape)}: pick the arch matching the checkpoint"
            )
    missing, _ = model.load_state_dict({k: v for k, v in state.items() if k in own}, strict=False)
    random_modules = sorted({k.rsplit(".", 1)[0] for k in missing})
    bad = [k for k in missing if ".cross_attn" not in k]
    if bad:
        raise ValueError(f"{source}: missing non-cross-attention weights, e.g. {bad[0]}")
    logger.info(
        "initialized veco from %s; %d modules start random (cross-attention): %s",
        source,
        len(random_modules),
        ", ".join(random_modules[:4]) + (" ..." if len(random_modules) > 4 else ""),
    )
