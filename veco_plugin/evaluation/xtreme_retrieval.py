"""XTREME's retrieval protocol on a pre-trained encoder (no fine-tuning): which layer, which
pooling, which side searches which (``third_party/evaluate_retrieval.py``,
``scripts/run_tatoeba.sh``, ``scripts/run_bucc2018.sh``).

**Layer.** ``evaluate_retrieval.py`` keeps the last ``--num_layers`` of HF's
``hidden_states`` (the embeddings, then each layer's output) and reads index
``--specific_layer`` among them: ``hidden_states[-N:][i]``, which is layer ``L - N + 1 + i``
in our numbering (:func:`..models.features.layer_states`: 0 = the embeddings, L = the last
layer) for an L-layer model with L >= N - 1. :func:`xtreme_layer`:

* tatoeba: ``run_tatoeba.sh`` passes N 12, i 7 (mBERT, 12 layers) -> layer 8; N 24, i 13
  for XLM-R large (24 layers) -> layer 14 (its XLM-R base branch, the large model's
  ``DIM 1024`` and N 24, cannot run on base's 768 dimensions: 12 layers read mBERT's 8);
* bucc2018: ``run_bucc2018.sh`` passes i 7 and leaves N at its default 12 -> layer 8 of 12,
  layer 20 of 24.

(``evaluate_retrieval.py``'s own defaults, N 12 and i 7, give 8 and 20.) Other depths have
no XTREME setting: the base model's share, ``round(8 L / 12)``, at least 1.

**Pooling.** Each sentence alone, ``<s> pieces </s>`` cut to 512 positions
(``--max_seq_length 512``): Tatoeba the mean over all its positions, ``<s>`` and ``</s>``
included (no ``--pool_skip_special_token``); BUCC the ``<s>`` state (``--pool_type cls``).

**Tatoeba's direction.** ``similarity_search(x, y)`` indexes the non-English side ``x`` and
queries it with the English ``y``: each English sentence retrieves its nearest non-English
sentence by cosine, and is right when that is its own translation.
"""

from typing import Any, List, Optional, Sequence

import torch
import torch.nn.functional as F
from fairseq.data import Dictionary
from fairseq.models.roberta import RobertaModel
from torch import Tensor

from ..errors import VecoUserError
from ..models.features import layer_states, num_layers
from .retrieval import embed, knn, pad_batch, sentence_ids

POOLINGS = ("mean", "cls")
# task -> {depth L: layer}, from XTREME's scripts (module docstring)
XTREME_LAYERS = {"tatoeba": {12: 8, 24: 14}, "bucc2018": {12: 8, 24: 20}}
MAX_POSITIONS = 512  # --max_seq_length of run_tatoeba.sh and run_bucc2018.sh


def xtreme_layer(layers: int, task: str) -> int:
    """The layer XTREME's scripts read for ``task`` in an encoder of ``layers`` layers."""
    if task not in XTREME_LAYERS:
        raise VecoUserError(f"{task}: XTREME's retrieval tasks are {', '.join(XTREME_LAYERS)}")
    return XTREME_LAYERS[task].get(layers, max(1, round(layers * 8 / 12)))


def resolve(model: RobertaModel, layer: Optional[int], task: str) -> int:
    """``--layer`` (0..L) when given, else :func:`xtreme_layer`."""
    depth = num_layers(model)
    chosen = xtreme_layer(depth, task) if layer is None else layer
    if not 0 <= chosen <= depth:
        raise VecoUserError(f"--layer {chosen}: the model has layers 0..{depth} (0: embeddings)")
    return chosen


def encode(
    lines: Sequence[str], model: RobertaModel, dictionary: Dictionary, spm: Any
) -> List[List[int]]:
    """``<s> pieces </s>`` ids of each stripped line (XTREME's ``tokenize_text``), cut to
    the positions of the model and XTREME's 512."""
    positions = min(int(model.max_positions()), MAX_POSITIONS)
    pieces = spm.encode([line.strip() for line in lines], out_type=str)
    return sentence_ids(pieces, dictionary, positions)[0]


@torch.inference_mode()
def cls_states(
    model: RobertaModel, sentences: Sequence[Sequence[int]], layer: int, pad: int, batch_size: int
) -> Tensor:
    """The ``<s>`` state of ``layer`` for each sentence (ids) -> (N, C) float32."""
    device = next(model.parameters()).device
    out = []
    for start in range(0, len(sentences), batch_size):
        tokens = pad_batch(sentences[start : start + batch_size], pad).to(device)  # (B, T)
        out.append(layer_states(model, tokens, layer)[:, 0].float().cpu())  # (B, C)
    dim = model.encoder.sentence_encoder.embed_tokens.embedding_dim
    return torch.cat(out) if out else torch.empty(0, dim)


def sentence_embeddings(
    model: RobertaModel,
    dictionary: Dictionary,
    spm: Any,
    lines: Sequence[str],
    layer: int,
    pooling: str,
    batch_size: int = 64,
) -> Tensor:
    """XTREME's sentence embeddings (``pooling``: mean or cls) of raw ``lines`` -> (N, C)."""
    if pooling not in POOLINGS:
        raise VecoUserError(f"pooling {pooling}: one of {', '.join(POOLINGS)}")
    ids = encode(lines, model, dictionary, spm)
    if pooling == "mean":
        return embed(model, ids, layer, dictionary.pad(), batch_size)
    return cls_states(model, ids, layer, dictionary.pad(), batch_size)


def nearest(queries: Tensor, keys: Tensor) -> Tensor:
    """Each query's nearest key by cosine: queries (N, C), keys (M, C) -> (N,) indices."""
    if keys.size(0) == 0:
        raise VecoUserError("nothing to search: the searched side holds no sentence")
    q, k = F.normalize(queries.float(), dim=-1), F.normalize(keys.float(), dim=-1)
    return knn(q, k, 1, "torch")[1][:, 0]


def accuracy(predicted: Sequence[int], gold: Sequence[int]) -> float:
    """Percent of positions where ``predicted`` equals ``gold`` (``evaluate.py``'s
    accuracy over prediction lines)."""
    if len(predicted) != len(gold) or not gold:
        raise VecoUserError(f"{len(predicted)} predictions for {len(gold)} gold indices")
    return 100 * sum(int(p) == int(g) for p, g in zip(predicted, gold)) / len(gold)
