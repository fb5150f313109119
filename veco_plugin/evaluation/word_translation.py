"""ALIGN-MLM's "alignment" score on a real bilingual dictionary (word translation by
nearest neighbour over input embeddings).

The paper (§5, after Deshpande et al. 2021) scores a token of the natural language 100%
when its cosine similarity with its counterpart in the derived language is the highest
over the derived language's vocabulary, else 0%, and averages over tokens. Natural
language pairs have no one-to-one vocabulary, so here:

* queries: the distinct source words of a held-out word list (each with every
  translation it has there; words with the same piece ids are one query);
* a word's vector: the mean of its pieces' input-embedding rows
  (:func:`veco_plugin.data.bilingual_dictionary.mean_embeddings`);
* candidates: every distinct target word of the word lists given (held-out and
  training lists of the same language pair: their target sides are real words of the
  target language, each with an embedding; the joint subword vocabulary has no row for
  a multi-piece word and mixes both languages, so it cannot serve as the paper's
  "derived language vocabulary"). The held-out list's own target words are always in;
* a hit: some translation of the query is strictly closer (cosine) than every other
  candidate. A tie is a miss, so collapsed (e.g. all-equal) embeddings score 0%.

:func:`word_translation_hits` returns hit and query counts as tensors on the table's
device (summable across workers with ``all_reduce``, no host synchronisation);
:func:`accuracy` turns them into a percentage for reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import torch
import torch.nn.functional as F

from ..data.bilingual_dictionary import Pieces, ResolvedDictionary, mean_embeddings, pad_pieces


@dataclass
class WordTranslationTask:
    """Queries, candidates and which candidates translate which query.

    ``query_ids, query_mask: (Q, P)``, ``candidate_ids, candidate_mask: (K, P')``,
    ``gold: (Q, K)`` bool; ``query_words``/``candidate_words``: one word string each (the
    first seen for its piece ids).
    """

    query_words: List[str]
    candidate_words: List[str]
    query_ids: torch.Tensor
    query_mask: torch.Tensor
    candidate_ids: torch.Tensor
    candidate_mask: torch.Tensor
    gold: torch.Tensor

    def __len__(self) -> int:
        return len(self.query_words)

    def to(self, device: torch.device | str) -> "WordTranslationTask":
        """A copy with the tensors on ``device``."""
        return WordTranslationTask(
            self.query_words,
            self.candidate_words,
            self.query_ids.to(device),
            self.query_mask.to(device),
            self.candidate_ids.to(device),
            self.candidate_mask.to(device),
            self.gold.to(device),
        )


def build_task(
    heldout: ResolvedDictionary, others: Sequence[ResolvedDictionary] = ()
) -> WordTranslationTask:
    """Queries from ``heldout``'s source side; candidates: the target words of
    ``heldout`` and of ``others`` (e.g. the training list), each once."""
    candidates: Dict[Pieces, int] = {}
    candidate_words: List[str] = []
    for resolved in (heldout, *others):
        for word, (_, tgt) in zip(resolved.tgt_words, resolved.pieces()):
            if tgt not in candidates:
                candidates[tgt] = len(candidate_words)
                candidate_words.append(word)
    queries: Dict[Pieces, int] = {}
    query_words: List[str] = []
    golds: List[List[int]] = []
    for word, (src, tgt) in zip(heldout.src_words, heldout.pieces()):
        if src not in queries:
            queries[src] = len(query_words)
            query_words.append(word)
            golds.append([])
        golds[queries[src]].append(candidates[tgt])
    pad = heldout.pad
    query_ids, query_mask = pad_pieces(list(queries), pad)
    candidate_ids, candidate_mask = pad_pieces(list(candidates), pad)
    gold = torch.zeros((len(query_words), len(candidate_words)), dtype=torch.bool)
    for q, ks in enumerate(golds):
        gold[q, ks] = True
    return WordTranslationTask(
        query_words, candidate_words, query_ids, query_mask, candidate_ids, candidate_mask, gold
    )


def word_translation_hits(
    table: torch.Tensor, task: WordTranslationTask
) -> Tuple[torch.Tensor, torch.Tensor]:
    """``(hits, queries)``: int64 scalars on ``table``'s device; ``table: (V, C)`` (the
    model's input embedding weight), ``task`` on the same device.

    ``cos: (Q, K)`` in float32; a hit when the best translation's cosine exceeds the best
    other candidate's.
    """
    queries = torch.full((), len(task), dtype=torch.long, device=table.device)
    if len(task) == 0:
        return torch.zeros_like(queries), queries
    with torch.no_grad():
        q = F.normalize(mean_embeddings(table, task.query_ids, task.query_mask).float(), dim=-1)
        k = mean_embeddings(table, task.candidate_ids, task.candidate_mask).float()
        cos = q @ F.normalize(k, dim=-1).t()  # (Q, K)
        best_gold = cos.masked_fill(~task.gold, float("-inf")).amax(dim=1)  # (Q,)
        best_other = cos.masked_fill(task.gold, float("-inf")).amax(dim=1)  # (Q,)
        hits = (best_gold > best_other).sum()
    return hits, queries


def accuracy(hits: torch.Tensor, queries: torch.Tensor) -> float:
    """``100 * hits / queries`` (0.0 without queries); synchronises with the device."""
    n = int(queries.item())
    return 100.0 * float(hits.item()) / n if n else 0.0
