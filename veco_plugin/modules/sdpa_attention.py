"""fairseq's multi-head attention with the attention product in one fused call.

``VecoSdpaAttention`` keeps ``MultiheadAttention``'s parameters (``q_proj``,
``k_proj``, ``v_proj``, ``out_proj``: checkpoints load unchanged), its incremental
state (``prev_key``/``prev_value`` ``(N, H, S, D)`` and ``prev_key_padding_mask``, so
``reorder_incremental_state`` and beam search work unchanged) and its results, but
computes ``softmax(Q K^T / sqrt(D) + mask) V`` with
``torch.nn.functional.scaled_dot_product_attention`` (SDPA) on every path: the
self-attention, the pluggable cross-attention (``static_kv``, keys/values from the
other stream's H^L) and the decoder's attentions during incremental decoding, where
fairseq 0.12 computes its own softmax.

Masks reach SDPA in the form its fused kernels accept: none when there is neither a
padding nor an attention mask (flash attention eligible on GPU); the key padding mask
``(N, S)`` as an additive ``(N, 1, 1, S)`` mask (broadcast over heads and queries,
never expanded); with an attention mask ``(T, S)`` as well, one ``(N, 1, T, S)``.

Calls that need what SDPA does not return (``need_weights``, ``need_head_weights``,
``before_softmax``) or fairseq features outside this path (``add_bias_kv``,
``add_zero_attn``, xFormers, ONNX tracing, TPUs, pruned heads) run fairseq's own
forward.
"""

from typing import Dict, Optional, Tuple

import torch
import torch.nn.functional as F
from fairseq.modules import MultiheadAttention
from torch import Tensor

IncrementalState = Dict[str, Dict[str, Optional[Tensor]]]


def sdpa_mask(
    attn_mask: Optional[Tensor], key_padding_mask: Optional[Tensor], dtype: torch.dtype
) -> Optional[Tensor]:
    """fairseq's two masks as one SDPA ``attn_mask`` (additive, ``dtype``).

    Args:
        attn_mask: ``(T, S)`` additive (e.g. the decoder's future mask) or None
        key_padding_mask: ``(N, S)``, nonzero at padding keys, or None
    Returns:
        None, ``(T, S)``, ``(N, 1, 1, S)`` or ``(N, 1, T, S)``; ``-inf`` where masked
    """
    if attn_mask is not None:
        attn_mask = attn_mask.to(dtype)
    if key_padding_mask is None or key_padding_mask.dim() == 0:  # fairseq: 0-dim = none
        return attn_mask
    padding = key_padding_mask.to(torch.bool)[:, None, None, :]
    base = attn_mask if attn_mask is not None else padding.new_zeros((), dtype=dtype)
    return base.masked_fill(padding, float("-inf"))


class VecoSdpaAttention(MultiheadAttention):
    """``MultiheadAttention`` whose attention runs in SDPA (see the module docstring).

    Inputs and outputs are fairseq's: ``query`` ``(T, N, C)``, ``key``/``value``
    ``(S, N, C)``, returns ``((T, N, C), None)`` on the SDPA path.
    """

    def forward(
        self,
        query: Tensor,
        key: Optional[Tensor],
        value: Optional[Tensor],
        key_padding_mask: Optional[Tensor] = None,
        incremental_state: Optional[IncrementalState] = None,
        need_weights: bool = True,
        static_kv: bool = False,
        attn_mask: Optional[Tensor] = None,
        before_softmax: bool = False,
        need_head_weights: bool = False,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        if (
            need_weights
            or need_head_weights
            or before_softmax
            or not self._fusable(query, attn_mask)
        ):
            return super().forward(
                query,
                key,
                value,
                key_padding_mask,
                incremental_state,
                need_weights,
                static_kv,
                attn_mask,
                before_softmax,
                need_head_weights,
            )
        tgt_len, bsz, embed_dim = query.size()
        q = self._split_heads(self.q_proj(query))  # (N, H, T, D)
        saved = None if incremental_state is None else self._get_input_buffer(incremental_state)
        k = v = None
        if not (static_kv and saved is not None and "prev_key" in saved):
            if self.self_attention:
                key = value = query
            elif self.encoder_decoder_attention:  # fairseq projects keys and values from key
                assert key is not None
                key, value, key_padding_mask = self._one_per_beam(key, key_padding_mask, bsz)
            assert key is not None and value is not None
            k = self._split_heads(self.k_proj(key))  # (N', H, S, D)
            v = self._split_heads(self.v_proj(value))
        if incremental_state is not None:
            k, v, key_padding_mask = self._extend_cache(
                incremental_state, saved, k, v, key_padding_mask, static_kv
            )
        assert k is not None and v is not None
        kv_bsz = k.size(0)
        if kv_bsz != bsz:  # beams share one memory: the beams' queries become one longer query
            q = q.view(kv_bsz, -1, self.num_heads, tgt_len, self.head_dim).transpose(1, 2)
            q = q.reshape(kv_bsz, self.num_heads, -1, self.head_dim)
        dropout = (
            self.dropout_module.p
            if self.training or self.dropout_module.apply_during_inference
            else 0.0
        )
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=sdpa_mask(attn_mask, key_padding_mask, q.dtype), dropout_p=dropout
        )  # (N', H, T', D)
        if kv_bsz != bsz:
            out = out.view(kv_bsz, self.num_heads, -1, tgt_len, self.head_dim).transpose(1, 2)
        out = out.reshape(bsz, self.num_heads, tgt_len, self.head_dim)
        out = out.permute(2, 0, 1, 3).reshape(tgt_len, bsz, embed_dim)
        return self.out_proj(out), None

    def _fusable(self, query: Tensor, attn_mask: Optional[Tensor]) -> bool:
        """Whether this call can take the SDPA path (else fairseq's forward)."""
        return not (
            # beamable encoder attention folds the beams into the queries (fairseq passes
            # this attention no attn_mask)
            (self.encoder_decoder_attention and self.beam_size > 1 and attn_mask is not None)
            or self.onnx_trace
            or self.skip_embed_dim_check
            or self.use_xformers
            or self.bias_k is not None
            or self.add_zero_attn
            or query.device.type == "xla"
        )

    def _split_heads(self, x: Tensor) -> Tensor:
        """``(L, N, H*D)`` -> ``(N, H, L, D)``."""
        length, n, _ = x.size()
        return x.view(length, n, self.num_heads, self.head_dim).permute(1, 2, 0, 3)

    def _one_per_beam(
        self, key: Tensor, key_padding_mask: Optional[Tensor], bsz: int
    ) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
        """fairseq's beamable encoder-decoder attention: with ``set_beam_size(k)`` the
        memory ``(S, N*k, C)`` of a beam search is read once per sentence ``(S, N, C)``."""
        if self.beam_size > 1 and key.size(1) == bsz:
            key = key.view(key.size(0), -1, self.beam_size, key.size(2))[:, :, 0]
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.view(
                    -1, self.beam_size, key_padding_mask.size(1)
                )[:, 0]
        return key, key, key_padding_mask

    def _extend_cache(
        self,
        incremental_state: IncrementalState,
        saved: Optional[Dict[str, Optional[Tensor]]],
        k: Optional[Tensor],
        v: Optional[Tensor],
        key_padding_mask: Optional[Tensor],
        static_kv: bool,
    ) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
        """Keys/values ``(N, H, S, D)`` of all steps so far, stored back in fairseq's
        format: a static memory is computed once, self-attention keys grow by a step."""
        saved = {} if saved is None else saved
        prev_key, prev_value = saved.get("prev_key"), saved.get("prev_value")
        if prev_key is not None and prev_value is not None:
            if static_kv:
                k, v = prev_key, prev_value
            else:
                assert k is not None and v is not None
                k, v = torch.cat([prev_key, k], dim=2), torch.cat([prev_value, v], dim=2)
        assert k is not None and v is not None
        key_padding_mask = MultiheadAttention._append_prev_key_padding_mask(
            key_padding_mask=key_padding_mask,
            prev_key_padding_mask=saved.get("prev_key_padding_mask"),
            batch_size=k.size(0),
            src_len=k.size(2),
            static_kv=static_kv,
        )
        saved["prev_key"], saved["prev_value"] = k, v
        saved["prev_key_padding_mask"] = key_padding_mask
        self._set_input_buffer(incremental_state, saved)
        return k, v, key_padding_mask


__all__ = ["VecoSdpaAttention", "sdpa_mask"]
