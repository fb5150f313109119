"""The VECO encoder stack: fairseq's ``TransformerEncoder`` built from VECO layers."""

from typing import Dict, Optional, Sequence, Tuple

import torch.nn.functional as F
from fairseq.models.transformer import TransformerConfig, TransformerEncoder
from fairseq.modules.checkpoint_activations import checkpoint_wrapper
from torch import Tensor

from .veco_encoder_layer import VecoEncoderLayer


class VecoTransformerEncoder(TransformerEncoder):
    """``forward`` (inherited) is the plug-out H stream; ``forward_stream`` runs
    either stream (plug-in against a memory, or plug-out with explicit positions)
    and can hand back intermediate layers."""

    def build_encoder_layer(self, args):
        cfg = TransformerConfig.from_namespace(args)
        layer = VecoEncoderLayer(cfg)
        if cfg.checkpoint_activations:  # both streams go through layer.forward
            layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
        return layer

    def embed(self, tokens: Tensor, positions: Optional[Tensor] = None) -> Tensor:
        """Embeddings S^0 = H^0 of ``tokens`` (B, T) -> (B, T, C), pads zeroed.

        ``positions`` (B, T) overrides fairseq's running positions (padding offset
        included, i.e. the first real token is at ``padding_idx + 1``)."""
        if positions is None:
            x, _ = self.forward_embedding(tokens)
        else:
            # forward_embedding with the given positions: LearnedPositionalEmbedding only
            # takes explicit positions without a padding_idx, so look its table up
            # directly (same weights, same offset).
            x = self.embed_scale * self.embed_tokens(tokens)
            x = x + F.embedding(positions, self.embed_positions.weight, self.padding_idx)
            if self.layernorm_embedding is not None:
                x = self.layernorm_embedding(x)
            x = self.dropout_module(x)
            if self.quant_noise is not None:
                x = self.quant_noise(x)
        return x * tokens.ne(self.padding_idx).unsqueeze(-1).type_as(x)

    def forward_stream(
        self,
        tokens: Tensor,
        memory: Optional[Tensor] = None,
        memory_padding_mask: Optional[Tensor] = None,
        positions: Optional[Tensor] = None,
        keep_layers: Sequence[int] = (),
    ) -> Tuple[Tensor, Dict[int, Tensor]]:
        """Run one stream over ``tokens`` (B, T).

        With ``memory`` (S, B, C) every layer is plugged in (S stream, eqs. 6-9);
        without it every layer is plugged out (H stream, eqs. 2-5).

        Returns:
            the last layer ``(T, B, C)`` and ``{l: (T, B, C)}`` for each ``l`` in
            ``keep_layers`` (0 = the embeddings, ``len(layers)`` = the last layer).
        """
        padding_mask = tokens.eq(self.padding_idx)  # always passed: no host sync on .any()
        x = self.embed(tokens, positions).transpose(0, 1)
        kept = {0: x} if 0 in keep_layers else {}
        for i, layer in enumerate(self.layers, start=1):
            if memory is None:
                x = layer(x, encoder_padding_mask=padding_mask)
            else:
                x = layer(
                    x,
                    encoder_padding_mask=padding_mask,
                    memory=memory,
                    memory_padding_mask=memory_padding_mask,
                )
            if i in keep_layers:
                kept[i] = x
        if self.layer_norm is not None:
            x = self.layer_norm(x)
            if len(self.layers) in keep_layers:
                kept[len(self.layers)] = x
        return x, kept

    def cross_attention_parameters(self):
        for layer in self.layers:
            yield from layer.cross_attention_parameters()
