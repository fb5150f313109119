"""A VECO Transformer layer: self-attention, pluggable cross-attention, FFN."""

from typing import Optional

from fairseq.modules import LayerNorm
from torch import Tensor

from .sdpa_attention import VecoSdpaAttention
from .sdpa_transformer import VecoSdpaEncoderLayer


class VecoEncoderLayer(VecoSdpaEncoderLayer):
    """fairseq's encoder layer plus a cross-attention block (``cross_attn`` and its
    own ``cross_attn_layer_norm``); both attentions run in SDPA
    (``VecoSdpaAttention``: fairseq's parameters, fused attention).

    ``forward`` serves both streams, so fairseq's ``checkpoint_wrapper``
    (``--checkpoint-activations``, ``--offload-activations``) covers both:

    * plug-out (no ``memory``): fairseq's own encoder layer forward, untouched; the
      cross-attention is not used. This is the H stream, eqs. (2)-(5).
    * plug-in (``memory`` given): self-attention over the S stream, then
      cross-attention whose queries come from the S stream and whose keys/values
      come from the paired sequence's last H layer, then the FFN: eqs. (6)-(9).
      Residual, dropout and layer-norm placement follow the layer's
      ``normalize_before`` exactly as fairseq's decoder layer does, so this block
      maps one-to-one onto a ``TransformerDecoderLayer`` without future mask.
    """

    def __init__(self, cfg, return_fc=False):
        super().__init__(cfg, return_fc=return_fc)
        self.cross_attn = self.build_cross_attention(self.embed_dim, cfg)
        self.cross_attn_layer_norm = LayerNorm(self.embed_dim, export=cfg.export)

    def build_cross_attention(self, embed_dim, cfg):
        return VecoSdpaAttention(
            embed_dim,
            cfg.encoder.attention_heads,
            kdim=embed_dim,
            vdim=embed_dim,
            dropout=cfg.attention_dropout,
            encoder_decoder_attention=True,
            q_noise=self.quant_noise,
            qn_block_size=self.quant_noise_block_size,
        )

    def _residual_block(self, x: Tensor, layer_norm, sublayer) -> Tensor:
        """``LN(x + dropout(sublayer(x)))`` (post-LN) or ``x + dropout(sublayer(LN(x)))``."""
        residual = x
        if self.normalize_before:
            x = layer_norm(x)
        x = self.residual_connection(self.dropout_module(sublayer(x)), residual)
        if not self.normalize_before:
            x = layer_norm(x)
        return x

    def _attention_block(
        self,
        x: Tensor,
        layer_norm,
        attention,
        memory: Optional[Tensor],
        padding_mask: Optional[Tensor],
        mask: Optional[Tensor],
        **options,
    ) -> Tensor:
        """:meth:`_residual_block` of ``attention`` from ``x`` to ``memory`` (None: to
        ``x`` itself), keys masked by ``padding_mask`` (B, S) and ``mask`` (additive)."""

        def attend(q: Tensor) -> Tensor:
            kv = q if memory is None else memory
            return attention(
                query=q,
                key=kv,
                value=kv,
                key_padding_mask=padding_mask,
                attn_mask=mask,
                need_weights=False,
                **options,
            )[0]

        return self._residual_block(x, layer_norm, attend)

    def _feed_forward(self, x: Tensor) -> Tensor:
        x = self.activation_dropout_module(self.activation_fn(self.fc1(x)))
        return self.fc2(x)

    def forward(
        self,
        x: Tensor,
        encoder_padding_mask: Optional[Tensor],
        attn_mask: Optional[Tensor] = None,
        memory: Optional[Tensor] = None,
        memory_padding_mask: Optional[Tensor] = None,
        memory_mask: Optional[Tensor] = None,
    ) -> Tensor:
        """One layer of either stream.

        Args:
            x: H^{l-1} or S^{l-1}, ``(T, B, C)``
            encoder_padding_mask: ``(B, T)``, True at padding (or None)
            attn_mask: self-attention mask, additive or 1 where masked (as fairseq's
                layer); plug-in: additive, e.g. ``(B, 1, T, T)`` (packed segments)
            memory: H^L of the paired sequence, ``(S, B, C)``: plugs the
                cross-attention in (eqs. 6-9); None: plug-out (eqs. 2-5)
            memory_padding_mask: ``(B, S)``, True at padding (or None)
            memory_mask: additive cross-attention mask ``(B, 1, T, S)`` (or None)
        Returns:
            H^l or S^l, ``(T, B, C)``
        """
        if memory is None:
            return super().forward(x, encoder_padding_mask, attn_mask)
        x = self._attention_block(
            x, self.self_attn_layer_norm, self.self_attn, None, encoder_padding_mask, attn_mask
        )
        x = self._attention_block(
            x,
            self.cross_attn_layer_norm,
            self.cross_attn,
            memory,
            memory_padding_mask,
            memory_mask,
            static_kv=True,
        )
        return self._residual_block(x, self.final_layer_norm, self._feed_forward)

    def cross_attention_parameters(self):
        """Parameters that exist only in VECO (absent from an XLM-R layer)."""
        yield from self.cross_attn.parameters()
        yield from self.cross_attn_layer_norm.parameters()


__all__ = ["VecoEncoderLayer"]
