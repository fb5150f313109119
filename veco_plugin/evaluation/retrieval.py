"""Parallel-sentence retrieval with a pre-trained encoder (Tatoeba / BUCC style).

Every sentence is embedded alone by the plug-out encoder (RoBERTa's forward, no
cross-attention): ``<s> pieces </s>``, the hidden states of one layer, mean-pooled over
the sentence's tokens (``<s>`` and ``</s>`` included, padding excluded; XTREME's pooling).

Neighbours are searched among the L2-normalized embeddings, so the inner product is the
cosine. Two scorings:

``cosine``  the nearest neighbour by cosine (Tatoeba's convention);
``margin``  ratio margin (Artetxe & Schwenk, 2019, eq. 2 with the ratio of §3.2)::

                margin(x, y) = cos(x, y) / (  sum_{z in NN_k(x)} cos(x, z) / 2k
                                            + sum_{z in NN_k(y)} cos(y, z) / 2k )

            where NN_k(x) are x's k nearest target sentences and NN_k(y) are y's k
            nearest source sentences (k = 4, BUCC's convention); as in their mining
            code, the candidates of x are its k nearest targets by cosine, re-ranked
            by margin.

Accuracy is Tatoeba's: sentence i of one side must retrieve sentence i of the other, in
both directions. Search is exact either way: ``torch`` (a chunked matrix product) or
``faiss`` (``IndexFlatIP``, ``pip install faiss-cpu``), which ``auto`` picks for pools of
at least :data:`FAISS_POOL` sentences; both give the same neighbours.
"""

import logging
import sys
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import torch
import torch.nn.functional as F
from fairseq.data import Dictionary
from fairseq.models.roberta import RobertaModel
from torch import Tensor
from tqdm import tqdm

from ..errors import VecoUserError
from ..models.features import layer_states

logger = logging.getLogger(__name__)

SCORINGS = ("cosine", "margin")
SEARCHES = ("auto", "torch", "faiss")

# the margin's neighbourhood (BUCC's convention)
MARGIN_K = 4

# ``--search auto``: faiss from this many sentences on the searched side (when installed)
FAISS_POOL = 50000

# queries per block of the exact torch search: (chunk, M) scores at a time
TORCH_CHUNK = 1024


# --- encoding ---------------------------------------------------------------------------


def sentence_ids(
    pieces: Sequence[Sequence[str]], dictionary: Dictionary, max_positions: int
) -> Tuple[List[List[int]], int]:
    """``<s> pieces </s>`` as dictionary ids, cut to ``max_positions`` tokens.

    Returns:
        the id lists and how many sentences were cut.
    """
    budget = max(0, max_positions - 2)
    out, cut = [], 0
    for sentence in pieces:
        ids = [dictionary.index(p) for p in sentence]
        if len(ids) > budget:
            ids, cut = ids[:budget], cut + 1
        out.append([dictionary.bos(), *ids, dictionary.eos()])
    return out, cut


def mean_pool(hidden: Tensor, mask: Tensor) -> Tensor:
    """Mean of ``hidden`` (B, T, C) over the positions where ``mask`` (B, T) is True -> (B, C)."""
    weights = mask.unsqueeze(-1).type_as(hidden)  # (B, T, 1)
    return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)


def pad_batch(rows: Sequence[Sequence[int]], pad: int) -> Tensor:
    """Right-padded (B, T) tensor of ``rows``."""
    tokens = torch.full((len(rows), max(map(len, rows))), pad, dtype=torch.long)
    for b, row in enumerate(rows):
        tokens[b, : len(row)] = torch.tensor(row, dtype=torch.long)
    return tokens


@torch.inference_mode()
def embed(
    model: RobertaModel,
    sentences: Sequence[Sequence[int]],
    layer: int,
    pad: int,
    batch_size: int = 64,
    progress: bool = False,
) -> Tensor:
    """Mean-pooled ``layer`` states of every sentence (``<s> ... </s>`` ids).

    Sentences run longest first in batches of ``batch_size``; the rows come back in input
    order.

    Returns:
        (N, C) float32 embeddings, not normalized.
    """
    if batch_size < 1:
        raise VecoUserError(f"--batch-size {batch_size}: must be positive")
    device = next(model.parameters()).device
    order = sorted(range(len(sentences)), key=lambda i: -len(sentences[i]))
    out: List[Tensor] = [torch.empty(0)] * len(sentences)
    with tqdm(
        total=len(sentences), unit="sent", disable=not progress, file=sys.stderr, leave=False
    ) as bar:
        for start in range(0, len(order), batch_size):
            ids = order[start : start + batch_size]
            tokens = pad_batch([sentences[i] for i in ids], pad).to(device)  # (B, T)
            hidden = layer_states(model, tokens, layer)  # (B, T, C)
            pooled = mean_pool(hidden, tokens.ne(pad)).float().cpu()  # (B, C)
            for b, i in enumerate(ids):
                out[i] = pooled[b]
            bar.update(len(ids))
    if not out:
        return torch.empty(0, model.encoder.sentence_encoder.embed_tokens.embedding_dim)
    return torch.stack(out)


# --- search ---------------------------------------------------------------------------


def knn_torch(
    queries: Tensor, keys: Tensor, k: int, chunk: int = TORCH_CHUNK
) -> Tuple[Tensor, Tensor]:
    """Exact k largest inner products of each query among ``keys``.

    Args:
        queries: (N, C); keys: (M, C); 1 <= k <= M.
    Returns:
        scores (N, k) descending and their key indices (N, k).
    """
    scores, ids = [], []
    for start in range(0, queries.size(0), chunk):
        block = queries[start : start + chunk] @ keys.t()  # (chunk, M)
        top = block.topk(k, dim=1)
        scores.append(top.values)
        ids.append(top.indices)
    if not scores:
        return queries.new_empty(0, k), torch.empty(0, k, dtype=torch.long)
    return torch.cat(scores), torch.cat(ids)


def _faiss():
    try:
        import faiss
    except ImportError:
        raise VecoUserError(
            "--search faiss needs faiss, which is not installed: pip install faiss-cpu (or "
            "pip install 'veco_plugin[retrieval]'), or use --search torch"
        ) from None
    return faiss


def knn_faiss(queries: Tensor, keys: Tensor, k: int) -> Tuple[Tensor, Tensor]:
    """:func:`knn_torch` by faiss's exact inner-product index (``IndexFlatIP``)."""
    faiss = _faiss()
    index = faiss.IndexFlatIP(keys.size(1))
    index.add(keys.float().contiguous().numpy())
    scores, ids = index.search(queries.float().contiguous().numpy(), k)
    return torch.from_numpy(scores), torch.from_numpy(ids).long()


def check_search(search: str) -> None:
    """Refuse, before any work, a ``search`` (one of :data:`SEARCHES`) that cannot run."""
    if search not in SEARCHES:
        raise VecoUserError(f"--search {search}: one of {', '.join(SEARCHES)}")
    if search == "faiss":
        _faiss()


def choose_search(search: str, pool: int) -> str:
    """``torch`` or ``faiss`` for ``search`` (one of :data:`SEARCHES`) over ``pool`` keys."""
    check_search(search)
    if search != "auto":
        return search
    if pool < FAISS_POOL:
        return "torch"
    try:
        import faiss  # noqa: F401
    except ImportError:
        logger.info("%d sentences: faiss would be faster (pip install faiss-cpu)", pool)
        return "torch"
    return "faiss"


def knn(queries: Tensor, keys: Tensor, k: int, search: str) -> Tuple[Tensor, Tensor]:
    """k nearest ``keys`` (M, C) of each of ``queries`` (N, C) by inner product, with the
    backend ``search`` (``torch`` or ``faiss``); ``k`` capped at M."""
    k = min(k, keys.size(0))
    if search == "faiss":
        return knn_faiss(queries, keys, k)
    return knn_torch(queries, keys, k)


def best_targets(
    src: Tensor, tgt: Tensor, scoring: str = "cosine", k: int = MARGIN_K, search: str = "torch"
) -> Tensor:
    """Index of the retrieved target of every source sentence.

    Args:
        src: (N, C), tgt: (M, C) embeddings (normalized here).
        scoring: ``cosine`` or ``margin`` (module docstring); k: the margin's neighbourhood
            and candidate count.
        search: ``torch`` or ``faiss`` (see :func:`choose_search` for ``auto``).
    Returns:
        (N,) target indices.
    """
    if scoring not in SCORINGS:
        raise VecoUserError(f"--scoring {scoring}: one of {', '.join(SCORINGS)}")
    if k < 1:
        raise VecoUserError(f"--k {k}: must be positive")
    if src.size(0) == 0 or tgt.size(0) == 0:
        return torch.empty(0, dtype=torch.long)
    src, tgt = F.normalize(src.float(), dim=-1), F.normalize(tgt.float(), dim=-1)
    if scoring == "cosine":
        return knn(src, tgt, 1, search)[1][:, 0]
    fwd_scores, fwd_ids = knn(src, tgt, k, search)  # (N, k): candidates and NN_k(x)
    bwd_scores, _ = knn(tgt, src, k, search)  # (M, k): NN_k(y) among the sources
    fwd_mean, bwd_mean = fwd_scores.mean(1), bwd_scores.mean(1)  # (N,), (M,)
    margin = fwd_scores / ((fwd_mean.unsqueeze(1) + bwd_mean[fwd_ids]) / 2)  # (N, k)
    return fwd_ids.gather(1, margin.argmax(1, keepdim=True)).squeeze(1)


# --- evaluation -----------------------------------------------------------------------


@dataclass
class RetrievalResult:
    """Tatoeba-style top-1 accuracy in both directions."""

    src2tgt: float  # share of sources i that retrieve target i
    tgt2src: float  # share of targets i that retrieve source i
    sentences: int
    layer: int
    scoring: str
    k: int
    search: str

    def as_dict(self) -> Dict[str, object]:
        return dict(self.__dict__)


def top1_accuracy(predicted: Tensor) -> float:
    """Share of rows i whose prediction is i (``predicted``: (N,) indices)."""
    if predicted.numel() == 0:
        return 0.0
    gold = torch.arange(predicted.numel())
    return float(predicted.eq(gold).float().mean())


def evaluate(
    src: Tensor,
    tgt: Tensor,
    layer: int,
    scoring: str = "cosine",
    k: int = MARGIN_K,
    search: str = "auto",
) -> RetrievalResult:
    """Top-1 accuracy of line-aligned embeddings ``src``, ``tgt`` (N, C) in both directions."""
    if src.size(0) != tgt.size(0):
        raise VecoUserError(f"{src.size(0)} source but {tgt.size(0)} target sentences")
    backend = choose_search(search, src.size(0))
    return RetrievalResult(
        src2tgt=top1_accuracy(best_targets(src, tgt, scoring, k, backend)),
        tgt2src=top1_accuracy(best_targets(tgt, src, scoring, k, backend)),
        sentences=src.size(0),
        layer=layer,
        scoring=scoring,
        k=k,
        search=backend,
    )
