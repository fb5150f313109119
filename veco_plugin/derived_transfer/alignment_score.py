"""ALIGN-MLM's vocabulary alignment score (Tang et al., §5, Table 8 and Figure 3) on a
checkpoint's input embeddings.

An English token ``e`` is *aligned* when, among the derived tokens ``D`` (the T_trans
copies), its own copy ``c(e)`` is the most similar to it::

    aligned(e)  <=>  cos(E[e], E[c(e)]) > cos(E[e], E[d])  for every d in D, d != c(e)

(a tie with another copy is not aligned), and a score is the share of aligned tokens
over a set of English tokens. :func:`score_checkpoint` reports, each with its count:

- ``vocabulary`` (the headline ``score``): the paper's §5, every non-special English token
  with a copy, ``D`` every copy;
- ``dictionary`` / ``outside``: the same marks split into the English tokens of the
  bilingual dictionary (``bilingual.txt``: what DICT-MLM and ALIGN-MLM were given) and
  the others (did a model align what it was not told to?);
- ``occurring``: the English tokens that occur in the pre-training text, ``D`` their
  copies (a token that never occurs keeps its random initial row);
- for a checkpoint with XLM's language embeddings, ``languages``: the rows with their
  language vectors added, ``E[v] + L[lang(v)]`` (what the encoder adds up), as the
  authors' ``compute_alignment_with_lang_ids.py`` scores XLM and ALIGN-MLM, on a random
  ``SAMPLE`` (40 %, its ``valid_fraction``) of the English tokens drawn with ``seed``,
  ``D`` every copy; and ``sampled_rows``: the token rows alone on the same sample.

The authors' scripts draw their 40 % from the whole first half of the vocabulary (specials
included) with numpy's seed 42; ours draws from the non-special English tokens with the
run's seed.
"""

import os
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

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


SAMPLE = 0.4
"""the share of English tokens the language-vector score is drawn on (the authors'
``valid_fraction``)."""


def aligned_mask(
    embeddings: Tensor,
    english: Tensor,
    copies: Tensor,
    chunk: int = 1024,
    rows: Optional[Tensor] = None,
) -> Tensor:
    """Which English tokens are aligned.

    Args:
        embeddings: (V, C) input embeddings
        english: (N,) int64, the English token ids
        copies: (N,) int64, ``copies[i]`` the copy of ``english[i]``; the candidates
        chunk: English rows compared at a time (memory: chunk x N)
        rows: (K,) int64, the positions in ``english`` scored (default: all)
    Returns:
        (K,) bool: row ``rows[k]``'s own copy is strictly the most similar of ``copies``.
    """
    if english.shape != copies.shape or english.dim() != 1:
        raise ValueError(f"english {tuple(english.shape)} and copies {tuple(copies.shape)}")
    rows = torch.arange(len(english)) if rows is None else rows
    src = F.normalize(embeddings[english[rows]].float(), dim=-1)  # (K, C)
    tgt = F.normalize(embeddings[copies].float(), dim=-1)  # (N, C)
    out = []
    for start in range(0, len(rows), chunk):
        sims = src[start : start + chunk] @ tgt.T  # (k, N)
        at = torch.arange(sims.shape[0])
        own_column = rows[start : start + chunk]  # (k,)
        own = sims[at, own_column].clone()  # (k,)
        sims[at, own_column] = float("-inf")
        out.append(own > sims.max(dim=1).values)
    return torch.cat(out) if out else torch.zeros(0, dtype=torch.bool)


def alignment_score(embeddings: Tensor, english: Tensor, copies: Tensor) -> AlignmentScore:
    """:func:`aligned_mask` counted."""
    return counted(aligned_mask(embeddings, english, copies))


def counted(mask: Tensor) -> AlignmentScore:
    """(N,) bool marks as a score."""
    return AlignmentScore(int(mask.sum()), len(mask))


def token_pairs(
    symbols: List[str], first_ordinary: int, occurring: Optional[Set[int]] = None
) -> Tuple[Tensor, Tensor]:
    """(N,) English ids and (N,) ids of their copies: every English symbol at or after
    ``first_ordinary`` (fairseq's ``nspecial``) that has a copy (``MARKER + symbol``) in
    ``symbols`` and, when ``occurring`` is given, is in it; in dictionary order."""
    index = {s: i for i, s in enumerate(symbols)}
    english, copies = [], []
    for i, symbol in enumerate(symbols):
        if i < first_ordinary or symbol.startswith(MARKER):
            continue
        if occurring is not None and i not in occurring:
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


def checkpoint_embeddings(path: str) -> Tuple[Tensor, Optional[Tensor]]:
    """(V, C) the input embeddings of the fairseq checkpoint ``path`` and, when it has
    XLM's language embeddings (:mod:`...modules.language_embedding`), (V, C) each token's
    language vector (zero for a token of no language); else None."""
    from ..checkpoints.encoder import read_checkpoint

    state = read_checkpoint(path, f"checkpoint {path}")["model"]
    for key, value in state.items():
        if key.endswith(EMBEDDINGS):
            prefix = key[: -len("weight")]
            if prefix + "languages.weight" not in state:
                return value, None
            vectors = state[prefix + "languages.weight"]  # (count + 1, C), the last zero
            return value, vectors[state[prefix + "token_language"]]
    raise VecoUserError(f"checkpoint {path}: no {EMBEDDINGS}: not a veco/RoBERTa encoder")


def dictionary_tokens(path: str, index: Dict[str, int]) -> Set[int]:
    """Ids of the tokens of a ``bilingual.txt`` (``token token`` lines: both sides)."""
    with open(path, encoding="utf-8") as f:
        return {index[t] for line in f for t in line.split() if t in index}


def sample_rows(count: int, share: float, seed: int) -> Tensor:
    """(round(share * count),) int64: distinct positions in [0, count), drawn with
    ``seed``, ascending."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randperm(count, generator=generator)[: round(share * count)].sort().values


def score_checkpoint(
    checkpoint: str, dict_path: str, texts: Iterable[str], pairs: str, seed: int
) -> Dict[str, Any]:
    """The alignment scores of ``checkpoint`` (trained on ``dict_path``, the joint
    dictionary, as ``veco_pretraining`` loads it: ``<mask>`` appended; a fine-tuned
    model keeps the same rows): over the vocabulary, split by the dictionary ``pairs``
    (``bilingual.txt``), over the English tokens occurring in the piece files ``texts``
    and, with language embeddings, with the language vectors on a ``seed``ed sample."""
    from ..data.dictionary import load_dictionary_with_mask

    dictionary = load_dictionary_with_mask(dict_path)
    embeddings, languages = checkpoint_embeddings(checkpoint)
    if embeddings.shape[0] != len(dictionary):
        raise VecoUserError(
            f"checkpoint {checkpoint}: {embeddings.shape[0]} embedding rows, {dict_path} "
            f"has {len(dictionary)} symbols (with <mask>): not the checkpoint's dictionary"
        )
    english, copies = token_pairs(dictionary.symbols, dictionary.nspecial)
    marks = aligned_mask(embeddings, english, copies)  # (N,)
    given = dictionary_tokens(pairs, dictionary.indices)
    in_dictionary = torch.tensor([int(e) in given for e in english], dtype=torch.bool)
    whole = counted(marks)
    result: Dict[str, Any] = {"score": whole.score, "vocabulary": whole.as_dict()}
    result["dictionary"] = counted(marks[in_dictionary]).as_dict()
    result["outside"] = counted(marks[~in_dictionary]).as_dict()
    occurring = occurring_ids(texts, dictionary.indices)
    result["occurring"] = alignment_score(
        embeddings, *token_pairs(dictionary.symbols, dictionary.nspecial, occurring)
    ).as_dict()
    if languages is not None:
        rows = sample_rows(len(english), SAMPLE, seed)
        shifted = embeddings.float() + languages.float()  # (V, C)
        result["languages"] = counted(aligned_mask(shifted, english, copies, rows=rows)).as_dict()
        result["sampled_rows"] = counted(marks[rows]).as_dict()
        result["sample"] = {"share": SAMPLE, "seed": seed}
    result.update(checkpoint=os.path.abspath(checkpoint), vocabulary_size=len(dictionary))
    return result
