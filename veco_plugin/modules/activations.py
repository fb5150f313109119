"""fairseq's activations, the exact GELU without its fp32 detour.

fairseq's ``gelu`` is ``F.gelu(x.float()).type_as(x)``: in bf16/fp16 three kernels (a
cast up, GELU, a cast down) and a full-size fp32 copy. torch's GELU computes in fp32
inside its kernel for bf16/fp16 inputs and rounds once, as the detour does: one kernel,
the same values (tested: bit-equal in fp32, bf16 within one rounding). Every other
activation is fairseq's own.
"""

from typing import Callable

import torch.nn.functional as F
from fairseq import utils
from torch import Tensor


def activation(name: str) -> Callable[[Tensor], Tensor]:
    """The activation ``name`` (``--activation-fn``): ``F.gelu`` for fairseq's exact
    ``gelu``, else fairseq's ``get_activation_fn``."""
    if name == "gelu":
        return F.gelu
    return utils.get_activation_fn(name)
