"""The hidden states of one layer, as every tool reads them (``veco-align``,
``veco-retrieve``, the benchmarks): one resolver of ``--layer`` and one layer loop, the
encoder's own (:func:`~veco_plugin.modules.veco_transformer_encoder.run_stream`)."""

from typing import Optional

from fairseq.models.roberta import RobertaModel
from torch import Tensor

from ..errors import VecoUserError
from ..modules.veco_transformer_encoder import run_stream
from . import layer_spec


def num_layers(model: RobertaModel) -> int:
    return len(model.encoder.sentence_encoder.layers)


def resolve_layer(model: RobertaModel, layer: Optional[int], use: str) -> int:
    """``layer`` (``--layer``: 0 = the embeddings, L = the last layer), or else ``use``'s
    default layer (``layer_spec.DEFAULT_DEPTHS``); checked against the model's depth."""
    layers = num_layers(model)
    layer = layer_spec.default_layer(use, layers) if layer is None else layer
    if not 0 <= layer <= layers:
        raise VecoUserError(f"--layer {layer}: the model has layers 0..{layers} (0: embeddings)")
    return layer


def layer_states(model: RobertaModel, tokens: Tensor, layer: int) -> Tensor:
    """Hidden states of ``layer`` for ``tokens`` (B, T) -> (B, T, C), plug-out (RoBERTa's
    ``inner_states[layer]``: continuous positions, 0 = the embeddings), of a veco or a
    fairseq RoBERTa/XLM-R model; the layers above ``layer`` are never run."""
    _, kept = run_stream(model.encoder.sentence_encoder, tokens, keep_layers=(layer,), depth=layer)
    return kept[layer].transpose(0, 1)
