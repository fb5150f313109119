"""ALIGN-MLM's vocabulary alignment score (Tang et al., §4 and Fig. 2) on a pre-trained
checkpoint's input embeddings.

An English token ``e`` is *aligned* when, among the derived tokens ``D`` (the T_trans
copies), its own copy ``c(e)`` is the most similar to it::

    aligned(e)  <=>  cos(E[e], E[c(e)]) > cos(E[e], E[d])  for every d in D, d != c(e)

(a tie with another copy is not aligned), and the score is the share of aligned tokens,
``|{e : aligned(e)}| / |V_en|``. ``V_en`` is the non-special English vocabulary
restricted to the tokens that occur in the pre-training text, and ``D`` their copies:
a token that never occurs (and so its copy, which occurs exactly where it does) keeps its
random initial row, which says nothing about what pre-training aligned.
"""

import os
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Set, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor

from ..corpora.derived import MARKER
from ..errors import VecoUserError

EMBEDDINGS = "sentence_encoder.embed_tokens.weight"  # veco / RoBERTa input embeddings


@dataclass(frozen=True)
class AlignmentScore:
    aligned: int
    tokens: int

    @property
    def score(self) -> float:
        return self.aligned / self.tokens if self.tokens else 0.0

    def as_dict(self) -> Dict[str, Any]:
        return {"score": self.score, "aligned": self.aligned, "tokens": self.tokens}


def aligned_mask(embeddings: Tensor, english: Tensor, copies: Tensor, chunk: int = 1024) -> Tensor:
    """Which English tokens are aligned.

    Args:
        embeddings: (V, C) input embeddings
        english: (N,) int64, the English token ids
        copies: (N,) int64, ``copies[i]`` the copy of ``english[i]``; the candidates
        chunk: English rows compared at a time (memory: chunk x N)
    Returns:
        (N,) bool: row i's own copy is strictly the most similar of ``copies``.
    """
    if english.shape != copies.shape or english.dim() != 1:
        raise ValueError(f"english {tuple(english.shape)} and copies {tuple(copies.shape)}")
    src = F.normalize(embeddings[english].float(), dim=-1)  # (N, C)
    tgt = F.normalize(embeddings[copies].float(), dim=-1)  # (N, C)
    out = []
    for start in range(0, len(english), chunk):
        sims = src[start : start + chunk] @ tgt.T  # (n, N)
        rows = torch.arange(sims.shape[0])
        own = sims[rows, rows + start].clone()  # (n,)
        sims[rows, rows + start] = float("-inf")
        out.append(own > sims.max(dim=1).values)
    return torch.cat(out) if out else torch.zeros(0, dtype=torch.bool)


def alignment_score(embeddings: Tensor, english: Tensor, copies: Tensor) -> AlignmentScore:
    """:func:`aligned_mask` counted."""
    mask = aligned_mask(embeddings, english, copies)
    return AlignmentScore(int(mask.sum()), len(mask))


def token_pairs(
    symbols: List[str], first_ordinary: int, occurring: Set[int]
) -> Tuple[Tensor, Tensor]:
    """(N,) English ids and (N,) ids of their copies: every English symbol at or after
    ``first_ordinary`` (fairseq's ``nspecial``) that occurs and has a copy (``MARKER +
    symbol``) in ``symbols``, in dictionary order."""
    index = {s: i for i, s in enumerate(symbols)}
    english, copies = [], []
    for i, symbol in enumerate(symbols):
        if i < first_ordinary or symbol.startswith(MARKER) or i not in occurring:
            continue
        copy = index.get(MARKER + symbol)
        if copy is not None:
            english.append(i)
            copies.append(copy)
    return torch.tensor(english, dtype=torch.long), torch.tensor(copies, dtype=torch.long)


def occurring_ids(paths: Iterable[str], index: Dict[str, int]) -> Set[int]:
    """Ids of the tokens of space-separated piece files (tokens the dictionary lacks
    are ignored)."""
    seen: Set[str] = set()
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                seen.update(line.split())
    return {index[t] for t in seen if t in index}


def checkpoint_embeddings(path: str) -> Tensor:
    """(V, C) the input embeddings of the fairseq checkpoint ``path``."""
    from ..checkpoints.encoder import read_checkpoint

    state = read_checkpoint(path, f"checkpoint {path}")
    for key, value in state["model"].items():
        if key.endswith(EMBEDDINGS):
            return value
    raise VecoUserError(f"checkpoint {path}: no {EMBEDDINGS}: not a veco/RoBERTa encoder")


def score_checkpoint(checkpoint: str, dict_path: str, texts: Iterable[str]) -> Dict[str, Any]:
    """The alignment score of ``checkpoint`` (trained on ``dict_path``, the joint
    dictionary, as ``veco_pretraining`` loads it: ``<mask>`` appended), over the English
    tokens occurring in the piece files ``texts``."""
    from ..data.dictionary import load_dictionary_with_mask

    dictionary = load_dictionary_with_mask(dict_path)
    embeddings = checkpoint_embeddings(checkpoint)
    if embeddings.shape[0] != len(dictionary):
        raise VecoUserError(
            f"checkpoint {checkpoint}: {embeddings.shape[0]} embedding rows, {dict_path} "
            f"has {len(dictionary)} symbols (with <mask>): not the checkpoint's dictionary"
        )
    occurring = occurring_ids(texts, dictionary.indices)
    english, copies = token_pairs(dictionary.symbols, dictionary.nspecial, occurring)
    result = alignment_score(embeddings, english, copies).as_dict()
    result.update(checkpoint=os.path.abspath(checkpoint), vocabulary=len(dictionary))
    return result
