"""``veco_plugin.checkpoints.sizes``: a checkpoint's sizes from its weights, the named
``veco_transformer_*`` arch of those sizes, and the flags of the generic one."""

from argparse import Namespace

import pytest
import torch

from veco_plugin.checkpoints.sizes import (
    GENERIC_ARCH,
    ArchSizes,
    PretrainedSizes,
    SizesError,
    arch_sizes,
    pretrained_sizes,
    resolve_arch,
    size_flags,
)


def _state(prefix="encoder.sentence_encoder", layers=2, dim=64, ffn=256, rows=55, positions=66):
    """A state dict with only the weights the sizes are read from."""
    state = {
        f"{prefix}.embed_tokens.weight": torch.zeros(rows, dim),  # (V, C)
        f"{prefix}.embed_positions.weight": torch.zeros(positions, dim),  # (P, C)
    }
    for i in range(layers):
        state[f"{prefix}.layers.{i}.fc1.weight"] = torch.zeros(ffn, dim)  # (F, C)
    return state


def test_pretrained_sizes_from_the_weights_and_heads_from_the_config():
    sizes = pretrained_sizes(_state(), Namespace(encoder_attention_heads=4))
    assert sizes == PretrainedSizes(layers=2, dim=64, ffn=256, heads=4, rows=55, position_rows=66)
    # the old fairseq layout (decoder.sentence_encoder.*), no config: heads unknown
    old = pretrained_sizes(_state("decoder.sentence_encoder", layers=3, dim=32, ffn=96), None)
    assert (old.layers, old.dim, old.ffn, old.heads) == (3, 32, 96, 0)
    assert pretrained_sizes(_state(), {"encoder_attention_heads": 2}).heads == 2


def test_pretrained_sizes_refuses_other_checkpoints():
    with pytest.raises(SizesError, match="no \\*.sentence_encoder.embed_tokens.weight"):
        pretrained_sizes({"decoder.embed_tokens.weight": torch.zeros(3, 2)}, None)
    state = _state()
    del state["encoder.sentence_encoder.embed_positions.weight"]
    with pytest.raises(SizesError, match="no layers.0.fc1 or no learned positions"):
        pretrained_sizes(state, None)


def test_arch_sizes_are_veco_table_8():
    assert arch_sizes("veco_transformer_tiny") == ArchSizes(2, 64, 256, 4)
    assert arch_sizes("veco_transformer_large") == ArchSizes(24, 1024, 4096, 16)
    assert ArchSizes(2, 64, 256, 4).describe() == "2 layers x 64 (FFN 256, 4 heads)"
    assert ArchSizes(2, 64, 256, 0).describe() == "2 layers x 64 (FFN 256)"


def test_resolve_arch():
    tiny = ArchSizes(2, 64, 256, 4)
    assert resolve_arch(None, tiny) == "veco_transformer_tiny"
    assert resolve_arch(None, ArchSizes(2, 64, 256, 0)) == "veco_transformer_tiny"  # heads unknown
    assert resolve_arch("veco_transformer_tiny", tiny) == "veco_transformer_tiny"
    assert resolve_arch(GENERIC_ARCH, tiny) == GENERIC_ARCH
    odd = ArchSizes(3, 32, 96, 2)
    assert resolve_arch(None, odd) == GENERIC_ARCH
    assert resolve_arch(None, ArchSizes(2, 64, 256, 8)) == GENERIC_ARCH  # other heads
    with pytest.raises(SizesError, match="is 2 layers x 64.*use --arch veco_transformer "):
        resolve_arch("veco_transformer_tiny", odd)
    with pytest.raises(SizesError, match="is 12 layers x 768.*--arch veco_transformer_tiny"):
        resolve_arch("veco_transformer_base", tiny)
    with pytest.raises(SizesError, match="transformer_tiny: unknown; choose one of"):
        resolve_arch("transformer_tiny", tiny)


def test_size_flags():
    assert size_flags("veco_transformer_tiny", ArchSizes(2, 64, 256, 4)) == []
    assert size_flags(GENERIC_ARCH, ArchSizes(3, 32, 96, 2)) == [
        "--encoder-layers", "3", "--encoder-embed-dim", "32",
        "--encoder-ffn-embed-dim", "96", "--encoder-attention-heads", "2",
    ]  # fmt: skip
    with pytest.raises(SizesError, match="does not say its number of attention heads"):
        size_flags(GENERIC_ARCH, ArchSizes(3, 32, 96, 0))
