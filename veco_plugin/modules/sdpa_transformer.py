"""fairseq's Transformer encoder/decoder layers and stacks with SDPA attention.

Each class changes only a build hook: the attention modules become
``VecoSdpaAttention`` (same parameters, so checkpoints load unchanged). The decoder
also returns attention weights only when they are asked for (an explicit
``alignment_layer``, or ``--print-alignment`` at generation, which sets the layers'
``need_attn``): fairseq 0.12 computes the last layer's weights on every call, which
keeps that layer's encoder attention out of SDPA.
"""

from typing import Dict, List, Optional

from fairseq.distributed import fsdp_wrap
from fairseq.models.transformer import TransformerDecoderBase, TransformerEncoderBase
from fairseq.modules.checkpoint_activations import checkpoint_wrapper
from fairseq.modules.transformer_layer import (
    TransformerDecoderLayerBase,
    TransformerEncoderLayerBase,
)
from torch import Tensor

from .activations import activation
from .sdpa_attention import VecoSdpaAttention

NO_LAYER = -1  # an alignment_layer no decoder layer has: no attention weights


class VecoSdpaEncoderLayer(TransformerEncoderLayerBase):
    """fairseq's encoder layer whose self-attention runs in SDPA, its GELU without the
    fp32 detour (:mod:`.activations`)."""

    def __init__(self, cfg, return_fc=False):
        super().__init__(cfg, return_fc=return_fc)
        self.activation_fn = activation(cfg.activation_fn)

    def build_self_attention(self, embed_dim, cfg):
        return VecoSdpaAttention(
            embed_dim,
            cfg.encoder.attention_heads,
            dropout=cfg.attention_dropout,
            self_attention=True,
            q_noise=self.quant_noise,
            qn_block_size=self.quant_noise_block_size,
            xformers_att_config=cfg.encoder.xformers_att_config,
        )


class VecoSdpaDecoderLayer(TransformerDecoderLayerBase):
    """fairseq's decoder layer whose self- and encoder attention run in SDPA; it
    returns attention weights only when called with ``need_attn`` (or after
    ``make_generation_fast_(need_attn=True)``); its GELU without the fp32 detour."""

    def __init__(self, cfg, no_encoder_attn=False, add_bias_kv=False, add_zero_attn=False):
        super().__init__(cfg, no_encoder_attn, add_bias_kv, add_zero_attn)
        self.need_attn = False
        self.activation_fn = activation(cfg.activation_fn)

    def build_self_attention(self, embed_dim, cfg, add_bias_kv=False, add_zero_attn=False):
        return VecoSdpaAttention(
            embed_dim,
            cfg.decoder.attention_heads,
            dropout=cfg.attention_dropout,
            add_bias_kv=add_bias_kv,
            add_zero_attn=add_zero_attn,
            self_attention=not cfg.cross_self_attention,
            q_noise=self.quant_noise,
            qn_block_size=self.quant_noise_block_size,
            xformers_att_config=cfg.decoder.xformers_att_config,
        )

    def build_encoder_attention(self, embed_dim, cfg):
        return VecoSdpaAttention(
            embed_dim,
            cfg.decoder.attention_heads,
            kdim=cfg.encoder.embed_dim,
            vdim=cfg.encoder.embed_dim,
            dropout=cfg.attention_dropout,
            encoder_decoder_attention=True,
            q_noise=self.quant_noise,
            qn_block_size=self.quant_noise_block_size,
            xformers_att_config=cfg.encoder.xformers_att_config,
        )


def _wrap(layer, cfg):
    """fairseq's activation checkpointing and FSDP wrapping of a built layer."""
    checkpoint = cfg.checkpoint_activations
    if checkpoint:
        layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
    return fsdp_wrap(layer, min_num_params=0 if checkpoint else cfg.min_params_to_wrap)


class VecoSdpaTransformerEncoder(TransformerEncoderBase):
    """fairseq's Transformer encoder built from ``VecoSdpaEncoderLayer``."""

    def build_encoder_layer(self, cfg):
        return _wrap(VecoSdpaEncoderLayer(cfg, return_fc=self.return_fc), cfg)


class VecoSdpaTransformerDecoder(TransformerDecoderBase):
    """fairseq's Transformer decoder built from ``VecoSdpaDecoderLayer``."""

    def build_decoder_layer(self, cfg, no_encoder_attn=False):
        return _wrap(VecoSdpaDecoderLayer(cfg, no_encoder_attn), cfg)

    def extract_features(
        self,
        prev_output_tokens: Tensor,
        encoder_out: Optional[Dict[str, List[Tensor]]] = None,
        incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None,
        full_context_alignment: bool = False,
        alignment_layer: Optional[int] = None,
        alignment_heads: Optional[int] = None,
    ):
        """fairseq's, with ``alignment_layer=None`` meaning the last layer only when
        a layer's ``need_attn`` is set (``--print-alignment``), else no weights."""
        if alignment_layer is None and not any(
            getattr(layer, "need_attn", False) for layer in self.layers
        ):
            alignment_layer = NO_LAYER
        return super().extract_features(
            prev_output_tokens,
            encoder_out,
            incremental_state,
            full_context_alignment,
            alignment_layer,
            alignment_heads,
        )


__all__ = [
    "VecoSdpaDecoderLayer",
    "VecoSdpaEncoderLayer",
    "VecoSdpaTransformerDecoder",
    "VecoSdpaTransformerEncoder",
]
