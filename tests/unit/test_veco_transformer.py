"""``veco_transformer`` (``veco_plugin.models.veco_transformer``): tied layers share
modules and stay tied, tie-flag errors, and the archs have veco's sizes and conventions."""

from argparse import Namespace

import pytest
import torch

from tests.helpers.nmt import build_nmt, initialized
from tests.helpers.toy import build, random_tokens, toy_dictionary


def test_tied_layers_share_modules_and_stay_tied():
    d = toy_dictionary()
    veco = build("veco_tiny", d, seed=1)
    nmt, _ = initialized(veco, d, [1], tied=True)
    untied, _ = initialized(veco, d, [1], tied=False)
    enc, dec = nmt.encoder, nmt.decoder
    for name in ("self_attn", "self_attn_layer_norm", "fc1", "fc2", "final_layer_norm"):
        assert getattr(dec.layers[0], name) is getattr(enc.layers[1], name)
    assert dec.embed_positions is enc.embed_positions
    assert dec.layernorm_embedding is enc.layernorm_embedding
    assert dec.layers[0].encoder_attn is not None
    n_tied = sum(p.numel() for p in nmt.parameters())
    n_untied = sum(p.numel() for p in untied.parameters())
    per_layer = sum(p.numel() for p in veco.sentence_encoder.layers[1].parameters())
    cross = sum(p.numel() for p in veco.sentence_encoder.layers[1].cross_attention_parameters())
    positions = enc.embed_positions.weight.numel() + sum(
        p.numel() for p in enc.layernorm_embedding.parameters()
    )
    assert n_untied - n_tied == per_layer - cross + positions
    # one optimizer step keeps them identical (they are one parameter)
    nmt.train()
    opt = torch.optim.SGD(nmt.parameters(), lr=0.1)
    x = random_tokens(d, 2, 6, seed=1)
    out, _ = nmt(x, x.ne(d.pad()).sum(1), x)
    out.sum().backward()
    opt.step()
    state = nmt.state_dict()
    assert torch.equal(state["decoder.layers.0.fc1.weight"], state["encoder.layers.1.fc1.weight"])


def test_tie_flag_errors():
    d = toy_dictionary()
    with pytest.raises(ValueError, match="lists 1 layers but --decoder-layers is 2"):
        build_nmt(d, 2, tied=[1])
    with pytest.raises(ValueError, match="out of range"):
        build_nmt(d, 1, tied=[5])
    with pytest.raises(ValueError, match="twice"):
        build_nmt(d, 2, tied=[1, 1])


def test_archs_match_veco_sizes_and_pretraining_conventions():
    from fairseq.models import ARCH_CONFIG_REGISTRY

    for size in ("tiny", "small", "base", "large"):
        nmt, veco = Namespace(), Namespace()
        ARCH_CONFIG_REGISTRY[f"veco_transformer_{size}"](nmt)
        ARCH_CONFIG_REGISTRY[f"veco_{size}"](veco)
        for key in ("layers", "embed_dim", "ffn_embed_dim", "attention_heads"):
            assert getattr(nmt, f"encoder_{key}") == getattr(veco, f"encoder_{key}"), (size, key)
            assert getattr(nmt, f"decoder_{key}") == getattr(veco, f"encoder_{key}"), (size, key)
        assert nmt.share_all_embeddings and nmt.layernorm_embedding and nmt.no_scale_embedding
        assert nmt.encoder_learned_pos and nmt.decoder_learned_pos
        assert not nmt.encoder_normalize_before and not nmt.decoder_normalize_before
        assert nmt.activation_fn == "gelu"
        assert nmt.max_source_positions == nmt.max_target_positions == 512
    model = build_nmt(toy_dictionary(), 2)
    assert model.encoder.embed_scale == model.decoder.embed_scale == 1.0
    assert model.encoder.layer_norm is None and model.decoder.layer_norm is None  # post-LN
    assert model.encoder.embed_positions.weight.shape[0] == 64 + 2  # fairseq padding offset


def test_arch_functions_keep_what_the_user_passed():
    from fairseq.models import ARCH_CONFIG_REGISTRY

    args = Namespace(encoder_layers=3, decoder_layers=1, dropout=0.3, max_source_positions=256)
    ARCH_CONFIG_REGISTRY["veco_transformer_large"](args)
    assert (args.encoder_layers, args.decoder_layers, args.dropout) == (3, 1, 0.3)
    assert args.max_source_positions == 256 and args.encoder_embed_dim == 1024
    args = Namespace()
    ARCH_CONFIG_REGISTRY["veco_transformer_large"](args)
    assert args.decoder_layers == 24  # the paper's full decoder by default
