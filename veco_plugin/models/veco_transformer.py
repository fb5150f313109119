"""``veco_transformer``: the encoder-decoder Transformer that a ``veco`` model initializes.

A stock fairseq ``TransformerModel`` (so fairseq-train/generate/interactive work
unchanged, every attention in SDPA: ``modules/sdpa_transformer.py``) whose sizes and
embedding conventions are those of pre-training:
post-LN, GELU, learned positions with fairseq's padding offset (512 by default),
``layernorm_embedding`` after the embeddings, no embedding scale, and one embedding
matrix shared by source, target and output projection (``--share-all-embeddings``).

Paper §3.2 (NLG fine-tuning): each encoder layer is a pre-trained layer (plug-out);
each decoder layer is a pre-trained layer run plug-in, its cross-attention becoming
the encoder-decoder attention. ``veco-init-nmt`` (``veco_plugin/nmt_init/``) maps the
weights; this module only defines the network.

``--tie-decoder-to-encoder-layers 18,19,...`` keeps decoder layer j's self-attention,
FFN and their layer norms *the same modules* as encoder layer ``L[j]``'s during
fine-tuning (the paper's tied setting, §6.1), and then also shares the positions and
``layernorm_embedding``: the decoder-only parameters are then exactly the pre-trained
cross-attention blocks, as in the pre-trained model. ``veco-init-nmt --tie-layers``
writes the flag into the checkpoint and prints it for fairseq-train.

``--decoder-output-bias`` gives the output projection a bias (one per vocabulary
entry, zeros when trained from scratch): ``veco-init-nmt --keep-output-bias`` fills it
with the pre-training LM head's output bias, the one part of that head (dense + GELU +
LayerNorm + bias) that fits a decoder predicting from the tied embeddings.

The model carries a ``dictionary_digest`` buffer (hash of the dictionary symbols,
``<mask>`` included) so that loading a checkpoint with data binarized with another
dictionary fails with one line saying how to fix it. Flags that fairseq would only
assert on (width vs heads, dropout rates, unequal embedding widths with the shared
embedding matrix) are refused before the model is built (``flag_checks``).
"""

import hashlib
import logging
from typing import List, Optional, Sequence

import torch
from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import TransformerConfig, TransformerModel
from fairseq.models.transformer.transformer_legacy import (
    base_architecture as transformer_base_architecture,
)
from fairseq.utils import safe_getattr
from torch import nn

from ..errors import VecoUserError
from ..modules.sdpa_transformer import VecoSdpaTransformerDecoder, VecoSdpaTransformerEncoder
from .flag_checks import check_model_flags
from .layer_spec import count_layers, layer_list_problem, parse_layer_list
from .veco import fill_encoder_sizes

logger = logging.getLogger(__name__)

DIGEST_KEY = "dictionary_digest"
# Modules a decoder layer shares with its encoder layer when the layers are tied
# (a layer's self-attention/FFN block; veco-init-nmt copies the same ones).
TIED_LAYER_MODULES = ("self_attn", "self_attn_layer_norm", "fc1", "fc2", "final_layer_norm")
FIX_DICTIONARY = (
    "binarize with the pre-trained dictionary (fairseq-preprocess --joined-dictionary "
    "--srcdict <pretrained dict.txt>), or reduce it with veco-reduce-vocab and "
    "re-run veco-init-nmt --vocab-map"
)


def dictionary_digest(symbols: Sequence[str]) -> int:
    """A 63-bit fingerprint of a dictionary's symbols in order (ids <-> rows): the
    ``dictionary_digest`` buffer."""
    digest = hashlib.sha256("\n".join(symbols).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def parse_tied_layers(text: Optional[str]) -> List[int]:
    """``"18,19,20"`` -> ``[18, 19, 20]``; empty/None -> ``[]`` (untied)."""
    if not text:
        return []
    try:
        return parse_layer_list(str(text))
    except ValueError:
        raise VecoUserError(
            f"--tie-decoder-to-encoder-layers {text!r}: expected comma-separated layer "
            "indices, e.g. 18,19,20,21,22,23"
        ) from None


@register_model("veco_transformer")
class VecoTransformerModel(TransformerModel):
    """fairseq's Transformer with VECO's pre-training conventions (see module docstring)."""

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        parser.add_argument(
            "--tie-decoder-to-encoder-layers",
            type=str,
            metavar="LAYERS",
            help="comma-separated encoder layer per decoder layer whose self-attention, "
            "FFN and layer norms the decoder layer shares during fine-tuning "
            "(also shares positions and layernorm_embedding); empty: untied",
        )
        parser.add_argument(
            "--decoder-output-bias",
            action="store_true",
            help="a bias on the output projection (veco-init-nmt --keep-output-bias "
            "fills it with the pre-training LM head's bias)",
        )

    @classmethod
    def build_encoder(cls, args, src_dict, embed_tokens):
        return VecoSdpaTransformerEncoder(
            TransformerConfig.from_namespace(args), src_dict, embed_tokens
        )

    @classmethod
    def build_decoder(cls, args, tgt_dict, embed_tokens):
        cfg = TransformerConfig.from_namespace(args)
        decoder = VecoSdpaTransformerDecoder(
            cfg, tgt_dict, embed_tokens, no_encoder_attn=cfg.no_cross_attention
        )
        if safe_getattr(args, "decoder_output_bias", False):
            projection = decoder.output_projection  # (V, C) weight, tied to embed_tokens
            projection.bias = nn.Parameter(projection.weight.new_zeros(projection.out_features))
        return decoder

    @classmethod
    def build_model(cls, args, task):
        veco_transformer_base_architecture(args)
        check_model_flags(args, ("encoder", "decoder"))
        if args.share_all_embeddings and args.decoder_embed_dim != args.encoder_embed_dim:
            raise VecoUserError(
                f"--decoder-embed-dim {args.decoder_embed_dim} differs from --encoder-embed-dim "
                f"{args.encoder_embed_dim}: {cls.__name__} shares one embedding matrix "
                "(--share-all-embeddings); leave --decoder-embed-dim out"
            )
        tied = parse_tied_layers(safe_getattr(args, "tie_decoder_to_encoder_layers", None))
        model = super().build_model(args, task)
        if tied:
            tie_decoder_to_encoder(model, tied)
        digest = dictionary_digest(task.source_dictionary.symbols)
        model.register_buffer(DIGEST_KEY, torch.tensor(digest, dtype=torch.long))
        return model

    def load_state_dict(self, state_dict, strict=True, model_cfg=None, args=None):
        self._check_loadable(state_dict)
        return super().load_state_dict(state_dict, strict=strict, model_cfg=model_cfg, args=args)

    def _check_loadable(self, state_dict) -> None:
        """One-line errors for checkpoints built for other data or other flags:
        vocabulary size, dictionary digest, encoder/decoder depth, positions."""
        rows = self.encoder.embed_tokens.weight.size(0)
        emb = state_dict.get("encoder.embed_tokens.weight")
        if emb is not None and emb.size(0) != rows:
            _refuse(
                f"the checkpoint's embeddings have {emb.size(0)} rows but the data "
                f"dictionary (+<mask>) has {rows} types: run with --task "
                f"translation_from_pretrained_veco (it appends <mask>); {FIX_DICTIONARY}"
            )
        theirs, mine = state_dict.get(DIGEST_KEY), getattr(self, DIGEST_KEY, None)
        if mine is not None and theirs is None:
            logger.warning("checkpoint has no %s: the dictionary is not checked", DIGEST_KEY)
            state_dict[DIGEST_KEY] = mine.clone()
        elif mine is not None and int(theirs) != int(mine):
            _refuse(
                "the data dictionary is not the checkpoint's (same size, other symbols "
                f"or order): {FIX_DICTIONARY}"
            )
        for side, flag in (("encoder", "--arch"), ("decoder", "--decoder-layers")):
            depth, own = count_layers(state_dict, f"{side}.layers"), len(getattr(self, side).layers)
            if depth and depth != own:
                _refuse(
                    f"the checkpoint has {depth} {side} layers, the model {own}: pass the "
                    f"{flag} it was written with (veco-init-nmt prints the fairseq-train flags)"
                )
        pos = state_dict.get("encoder.embed_positions.weight")
        own_pos = self.encoder.embed_positions
        if pos is not None and own_pos is not None and pos.shape != own_pos.weight.shape:
            offset = self.encoder.padding_idx + 1
            n, own = pos.size(0) - offset, own_pos.weight.size(0) - offset
            _refuse(
                f"the checkpoint has {n} source positions, the model {own}: pass "
                f"--max-source-positions {n} --max-target-positions {n}"
            )


def _refuse(message: str) -> None:
    raise VecoUserError(message)  # one line, also through fairseq-train's generic re-raise


def tie_decoder_to_encoder(model: TransformerModel, encoder_layers: List[int]) -> None:
    """Make decoder layer j share ``TIED_LAYER_MODULES`` with encoder layer
    ``encoder_layers[j]``, and the decoder share the encoder's positions and
    ``layernorm_embedding``."""
    encoder, decoder = model.encoder, model.decoder
    if len(encoder_layers) != len(decoder.layers):
        raise VecoUserError(
            f"--tie-decoder-to-encoder-layers lists {len(encoder_layers)} layers but "
            f"--decoder-layers is {len(decoder.layers)}"
        )
    problem = layer_list_problem(encoder_layers, len(encoder.layers), "the encoder")
    if problem:
        raise VecoUserError(f"--tie-decoder-to-encoder-layers {encoder_layers}: {problem}")
    for j, i in enumerate(encoder_layers):
        for name in TIED_LAYER_MODULES:
            setattr(decoder.layers[j], name, getattr(encoder.layers[i], name))
    if encoder.embed_positions is not None:
        if encoder.embed_positions.weight.shape != decoder.embed_positions.weight.shape:
            raise VecoUserError(
                "tied layers share positions: give --max-source-positions equal to "
                "--max-target-positions"
            )
        decoder.embed_positions = encoder.embed_positions
    decoder.layernorm_embedding = encoder.layernorm_embedding


def veco_transformer_base_architecture(args):
    """XLM-R base sizes and VECO's pre-training conventions; decoder = encoder depth."""
    fill_encoder_sizes(args, "base")
    args.decoder_layers = safe_getattr(args, "decoder_layers", args.encoder_layers)
    args.decoder_embed_dim = safe_getattr(args, "decoder_embed_dim", args.encoder_embed_dim)
    args.decoder_ffn_embed_dim = safe_getattr(
        args, "decoder_ffn_embed_dim", args.encoder_ffn_embed_dim
    )
    args.decoder_attention_heads = safe_getattr(
        args, "decoder_attention_heads", args.encoder_attention_heads
    )
    args.max_source_positions = safe_getattr(args, "max_source_positions", 512)
    args.max_target_positions = safe_getattr(args, "max_target_positions", 512)
    args.encoder_learned_pos = safe_getattr(args, "encoder_learned_pos", True)
    args.decoder_learned_pos = safe_getattr(args, "decoder_learned_pos", True)
    args.layernorm_embedding = safe_getattr(args, "layernorm_embedding", True)
    args.no_scale_embedding = safe_getattr(args, "no_scale_embedding", True)
    args.activation_fn = safe_getattr(args, "activation_fn", "gelu")
    args.encoder_normalize_before = safe_getattr(args, "encoder_normalize_before", False)
    args.decoder_normalize_before = safe_getattr(args, "decoder_normalize_before", False)
    args.share_all_embeddings = safe_getattr(args, "share_all_embeddings", True)
    args.dropout = safe_getattr(args, "dropout", 0.1)
    args.attention_dropout = safe_getattr(args, "attention_dropout", 0.1)
    args.activation_dropout = safe_getattr(args, "activation_dropout", 0.0)
    args.tie_decoder_to_encoder_layers = safe_getattr(args, "tie_decoder_to_encoder_layers", None)
    args.decoder_output_bias = safe_getattr(args, "decoder_output_bias", False)
    transformer_base_architecture(args)


@register_model_architecture("veco_transformer", "veco_transformer")
def veco_transformer(args):
    """Any size: --encoder-layers/-embed-dim/-ffn-embed-dim/-attention-heads from the
    command line (``veco-init-nmt`` prints the checkpoint's), base sizes otherwise."""
    veco_transformer_base_architecture(args)


@register_model_architecture("veco_transformer", "veco_transformer_base")
def veco_transformer_base(args):
    """Paper Table 8, base: 12 layers, 768 hidden, 3072 FFN, 12 heads."""
    veco_transformer_base_architecture(args)


@register_model_architecture("veco_transformer", "veco_transformer_tiny")
def veco_transformer_tiny(args):
    """Test size, matches ``veco_tiny``: 2 layers, 64 hidden, 256 FFN, 4 heads."""
    fill_encoder_sizes(args, "tiny")
    veco_transformer_base_architecture(args)


@register_model_architecture("veco_transformer", "veco_transformer_small")
def veco_transformer_small(args):
    """Paper Table 8, small: 6 layers, 768 hidden, 3072 FFN, 12 heads."""
    fill_encoder_sizes(args, "small")
    veco_transformer_base_architecture(args)


@register_model_architecture("veco_transformer", "veco_transformer_large")
def veco_transformer_large(args):
    """Paper Table 8, large: 24 layers, 1024 hidden, 4096 FFN, 16 heads."""
    fill_encoder_sizes(args, "large")
    veco_transformer_base_architecture(args)
