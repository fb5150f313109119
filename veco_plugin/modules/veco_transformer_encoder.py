"""The VECO encoder stack: fairseq's ``TransformerEncoder`` built from VECO layers."""

from typing import Dict, Optional, Sequence, Tuple

import torch.nn.functional as F
from fairseq.models.transformer import TransformerConfig, TransformerEncoder
from fairseq.modules.checkpoint_activations import checkpoint_wrapper
from torch import Tensor

from .segments import segment_mask
from .veco_encoder_layer import VecoEncoderLayer


class VecoTransformerEncoder(TransformerEncoder):
    """``forward`` (inherited) is the plug-out H stream; ``forward_stream`` runs
    either stream (plug-in against a memory, or plug-out with explicit positions)
    and can hand back intermediate layers (:func:`run_stream`, which also serves the
    tools' features of fairseq's RoBERTa encoders: :mod:`veco_plugin.models.features`)."""

    def build_encoder_layer(self, args):
        cfg = TransformerConfig.from_namespace(args)
        layer = VecoEncoderLayer(cfg)
        if cfg.checkpoint_activations:  # both streams go through layer.forward
            layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
        if getattr(args, "compile_layers", False):
            # in place: the parameters keep their names (checkpoints are unchanged); shapes
            # first compile static, then once with dynamic sizes (torch's automatic dynamic)
            layer.compile()
        return layer

    def forward_stream(
        self,
        tokens: Tensor,
        memory: Optional[Tensor] = None,
        memory_padding_mask: Optional[Tensor] = None,
        positions: Optional[Tensor] = None,
        keep_layers: Sequence[int] = (),
        padded: bool = True,
        segments: Optional[Tensor] = None,
        memory_segments: Optional[Tensor] = None,
    ) -> Tuple[Tensor, Dict[int, Tensor]]:
        """:func:`run_stream` of this encoder, through every layer."""
        return run_stream(
            self,
            tokens,
            memory,
            memory_padding_mask,
            positions,
            keep_layers,
            padded=padded,
            segments=segments,
            memory_segments=memory_segments,
        )

    def cross_attention_parameters(self):
        for layer in self.layers:
            yield from layer.cross_attention_parameters()


def embed(
    encoder: TransformerEncoder, tokens: Tensor, positions: Optional[Tensor] = None
) -> Tensor:
    """Embeddings S^0 = H^0 of ``tokens`` (B, T) -> (B, T, C), pads zeroed, by a VECO or a
    fairseq RoBERTa ``encoder``.

    ``positions`` (B, T) overrides fairseq's running positions (padding offset
    included, i.e. the first real token is at ``padding_idx + 1``)."""
    if positions is None:
        x, _ = encoder.forward_embedding(tokens)
    else:
        # forward_embedding with the given positions: LearnedPositionalEmbedding only
        # takes explicit positions without a padding_idx, so look its table up
        # directly (same weights, same offset).
        x = encoder.embed_scale * encoder.embed_tokens(tokens)
        x = x + F.embedding(positions, encoder.embed_positions.weight, encoder.padding_idx)
        if encoder.layernorm_embedding is not None:
            x = encoder.layernorm_embedding(x)
        x = encoder.dropout_module(x)
        if encoder.quant_noise is not None:
            x = encoder.quant_noise(x)
    return x * tokens.ne(encoder.padding_idx).unsqueeze(-1).type_as(x)


def run_stream(
    encoder: TransformerEncoder,
    tokens: Tensor,
    memory: Optional[Tensor] = None,
    memory_padding_mask: Optional[Tensor] = None,
    positions: Optional[Tensor] = None,
    keep_layers: Sequence[int] = (),
    depth: Optional[int] = None,
    padded: bool = True,
    segments: Optional[Tensor] = None,
    memory_segments: Optional[Tensor] = None,
) -> Tuple[Tensor, Dict[int, Tensor]]:
    """Run one stream of ``encoder`` over ``tokens`` (B, T): the one layer loop of the
    plugin (training's two streams, and the tools' features of any layer).

    With ``memory`` (S, B, C) every layer is plugged in (S stream, eqs. 6-9; VECO layers
    only); without it every layer is plugged out (H stream, eqs. 2-5), which is RoBERTa's
    forward for a fairseq RoBERTa/XLM-R ``encoder``. ``depth`` stops after that many
    layers, the layers above never run, and hands back layer ``depth`` as it leaves its
    block (RoBERTa's ``inner_states[depth]``); without it every layer runs, then the
    encoder's final LayerNorm where it has one (pre-norm encoders).

    ``segments`` (B, T): packed rows (``veco_plugin.data.packing``), attention inside
    each segment (pad: 0), in place of the padding mask; ``memory_segments`` (B, S):
    the memory's, each S-stream query attending to its own segment of the memory.

    Returns:
        the last state ``(T, B, C)`` and ``{l: (T, B, C)}`` for each ``l`` in
        ``keep_layers`` (0 = the embeddings, ``len(layers)`` = the last layer, normalized
        as the returned state is).
    """
    # ``padded`` False: the host knows ``tokens`` holds no pad (the collater's lengths), so
    # no mask, and SDPA may take its fastest kernel; a device-side ``.any()`` would sync
    padding_mask = tokens.eq(encoder.padding_idx) if padded and segments is None else None
    x = embed(encoder, tokens, positions).transpose(0, 1)
    attn_mask = memory_mask = None
    if segments is not None:
        attn_mask = segment_mask(segments, segments, x.dtype)
        if memory is not None:
            assert memory_segments is not None, "packed rows attend to a packed memory"
            memory_mask = segment_mask(segments, memory_segments, x.dtype)
            memory_padding_mask = None
    kept = {0: x} if 0 in keep_layers else {}
    layers = encoder.layers if depth is None else encoder.layers[:depth]
    for i, layer in enumerate(layers, start=1):
        if memory is None:
            x = layer(x, encoder_padding_mask=padding_mask, attn_mask=attn_mask)
        else:
            x = layer(
                x,
                encoder_padding_mask=padding_mask,
                attn_mask=attn_mask,
                memory=memory,
                memory_padding_mask=memory_padding_mask,
                memory_mask=memory_mask,
            )
        if i in keep_layers:
            kept[i] = x
    if encoder.layer_norm is not None and depth is None:
        x = encoder.layer_norm(x)
        if len(encoder.layers) in keep_layers:
            kept[len(encoder.layers)] = x
    return x, kept
