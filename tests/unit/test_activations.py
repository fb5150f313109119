"""The GELU without fairseq's fp32 detour (``veco_plugin.modules.activations``)."""

import torch
import torch.nn.functional as F
from fairseq import utils as fairseq_utils
from fairseq.models.transformer import TransformerConfig
from fairseq.modules.gelu import gelu as fairseq_gelu
from torch.utils._python_dispatch import TorchDispatchMode

from tests.helpers.toy import build, toy_dictionary
from veco_plugin.modules.activations import activation
from veco_plugin.modules.sdpa_transformer import VecoSdpaDecoderLayer


class Ops(TorchDispatchMode):
    """The aten operators dispatched inside the block."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(str(func.overloadpacket))
        return func(*args, **(kwargs or {}))


def test_the_exact_gelu_gives_fairseqs_values_in_one_operator():
    x = torch.randn(4096, generator=torch.Generator().manual_seed(0)) * 4
    assert torch.equal(activation("gelu")(x), fairseq_gelu(x))  # fp32: bit for bit
    half = x.to(torch.bfloat16)
    # bf16: both compute in fp32 and round once (within one bf16 rounding, stated)
    torch.testing.assert_close(activation("gelu")(half), fairseq_gelu(half), rtol=2**-7, atol=0)
    with Ops() as ours:
        activation("gelu")(half)
    with Ops() as theirs:
        fairseq_gelu(half)
    assert ours.names == ["aten.gelu"] and len(theirs.names) == 3


def test_the_layers_and_the_lm_head_use_it():
    model = build("veco_tiny", toy_dictionary())
    layers = model.encoder.sentence_encoder.layers
    assert all(layer.activation_fn is F.gelu for layer in layers)
    assert model.encoder.lm_head.activation_fn is F.gelu
    cfg = TransformerConfig(activation_fn="gelu")
    assert VecoSdpaDecoderLayer(cfg).activation_fn is F.gelu
    cfg.activation_fn = "gelu_accurate"  # fairseq's tanh approximation stays fairseq's
    assert VecoSdpaDecoderLayer(cfg).activation_fn is fairseq_utils.get_activation_fn(
        "gelu_accurate"
    )
