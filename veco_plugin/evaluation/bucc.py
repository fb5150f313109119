"""BUCC 2018 bitext mining, as XTREME runs and scores it (``scripts/run_bucc2018.sh``,
``third_party/evaluate_retrieval.py``, ``third_party/utils_retrieve.py``, ``evaluate.py``).

XTREME's download keeps BUCC's *sample* split as ``dev`` (with its gold pairs) and its
*training* split as ``test`` (gold removed: the benchmark's hidden labels). Per language
pair ``xx-en``:

1. **Embed** every sentence alone: the ``<s>`` (CLS) state of one layer
   (``--pool_type cls --specific_layer 7`` of the last 12 layers: layer 8 of 12, 20 of 24,
   :func:`.xtreme_retrieval.xtreme_layer`; the embedding itself is
   :func:`.xtreme_retrieval.sentence_embeddings` with ``cls``); sentences repeated in a file
   are embedded once.
2. **Mine** (:func:`mine`, ``mine_bitext``'s defaults: ``mode mine``, ``retrieval max``,
   ``margin ratio``, ``neighborhood 4``, threshold 0): every source's best target and every
   target's best source by the ratio margin over cosine (the 4 nearest neighbours both
   ways, Artetxe & Schwenk 2019), the pairs then taken greedily by decreasing margin, each
   sentence at most once, margins above 0 kept.
3. **Map to ids** (:func:`candidate_scores`): a sentence that occurs under two ids is dropped
   (``read_sent2id``); a pair met twice keeps its highest margin.
4. **Threshold** (:func:`best_threshold`, ``bucc_optimize``): on the dev (sample) split, the
   candidates by decreasing margin, the F1 against gold after each; the threshold is midway
   between the margin of the candidate with the best F1 (the first such) and the next.
5. **Extract** (:func:`extract`): the test candidates with a margin at least the threshold,
   written one ``src_id<TAB>trg_id`` a line: XTREME's prediction file.
6. **Score** (:func:`f1_scores`, ``evaluate.py``'s ``bucc_f1``): precision, recall and F1 of
   the predicted pairs against gold, as sets of lines.

Where XTREME's released code cannot run as written, this module does what it means
(each listed in examples/xtreme/README.md): ``evaluate_retrieval.py`` passes an undefined
``threshold`` to ``bucc_eval`` (the dev split's best threshold is meant), names the target
id file ``{prefix}.id`` (``{prefix}.en.id`` is written), and keeps one candidate file for
both splits (the test split would reuse dev's candidates); ``bucc_optimize`` indexes past the
last candidate when that one gives the best F1 (here the threshold is then its margin).
The BUCC files themselves (comparable.limsi.fr) cannot be had here: the mining is tested on
embeddings, the scorer on XTREME's mock predictions and labels.
"""

from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Mapping, Sequence, Set, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor

from ..corpora.bucc import BuccSplit
from ..errors import VecoUserError
from .retrieval import knn_torch

# mine_bitext's neighbourhood of the ratio margin
NEIGHBOURHOOD = 4

Pair = Tuple[str, str]  # (source id, target id)


@dataclass(frozen=True)
class BuccScores:
    """Percent, as ``evaluate.py`` reports them."""

    precision: float
    recall: float
    f1: float


def _pairs(lines: Iterable[str]) -> Set[Tuple[str, ...]]:
    return {tuple(line.strip().split("\t")) for line in lines}


def f1_scores(gold: Iterable[str], predicted: Iterable[str]) -> BuccScores:
    """Precision, recall, F1 (percent) of ``predicted`` lines ``src_id<TAB>trg_id`` against
    ``gold`` lines, each side a set (``evaluate.py``'s ``bucc_f1``); all 0 when none is
    right."""
    labels, predictions = _pairs(gold), _pairs(predicted)
    correct = len(labels & predictions)
    if not correct:
        return BuccScores(0.0, 0.0, 0.0)
    precision, recall = correct / len(predictions), correct / len(labels)
    f1 = 2 * precision * recall / (precision + recall)
    return BuccScores(100 * precision, 100 * recall, 100 * f1)


def unique(sentences: Sequence[str]) -> Tuple[List[str], List[int]]:
    """The distinct sentences in first-seen order, and each line's index among them
    (``text_load_unify``)."""
    first: Dict[str, int] = {}
    index = [first.setdefault(s, len(first)) for s in sentences]
    return list(first), index


def _margins(x: Tensor, y: Tensor, x_mean: Tensor, y_mean: Tensor, k: int) -> Tuple[Tensor, Tensor]:
    """Each row of ``x``'s best column of ``y`` by ratio margin among its k nearest, and
    that margin; x: (N, C), y: (M, C) normalized; x_mean: (N,), y_mean: (M,)."""
    cos, ids = knn_torch(x, y, min(k, y.size(0)))  # (N, k)
    margin = cos / ((x_mean.unsqueeze(1) + y_mean[ids]) / 2)  # (N, k)
    best = margin.argmax(1, keepdim=True)
    return ids.gather(1, best).squeeze(1), margin.gather(1, best).squeeze(1)


def mine(src: Tensor, trg: Tensor, k: int = NEIGHBOURHOOD) -> List[Tuple[float, int, int]]:
    """``mine_bitext`` (``retrieval max``, ratio margin, threshold 0) on the embeddings of
    distinct sentences ``src`` (N, C) and ``trg`` (M, C).

    Returns:
        (margin, source row, target row), by decreasing margin, each row at most once.
    """
    if src.size(0) == 0 or trg.size(0) == 0:
        return []
    x, y = F.normalize(src.float(), dim=-1), F.normalize(trg.float(), dim=-1)
    x_mean = knn_torch(x, y, min(k, y.size(0)))[0].mean(1)  # (N,)
    y_mean = knn_torch(y, x, min(k, x.size(0)))[0].mean(1)  # (M,)
    fwd_best, fwd_margin = _margins(x, y, x_mean, y_mean, k)
    bwd_best, bwd_margin = _margins(y, x, y_mean, x_mean, k)
    rows = torch.cat([torch.arange(x.size(0)), bwd_best])
    cols = torch.cat([fwd_best, torch.arange(y.size(0))])
    margins = torch.cat([fwd_margin, bwd_margin]).double()
    mined: List[Tuple[float, int, int]] = []
    seen_src: Set[int] = set()
    seen_trg: Set[int] = set()
    for i in torch.argsort(-margins, stable=True).tolist():
        row, col, margin = int(rows[i]), int(cols[i]), float(margins[i])
        if row not in seen_src and col not in seen_trg:
            seen_src.add(row)
            seen_trg.add(col)
            if margin > 0:
                mined.append((margin, row, col))
    return mined


def sentence_ids(ids: Sequence[str], sentences: Sequence[str]) -> Dict[str, str]:
    """Sentence -> its id, sentences under two or more ids left out (``read_sent2id``)."""
    owner: Dict[str, str] = {}
    repeated: Set[str] = set()
    for id_, sentence in zip(ids, sentences):
        id_, sentence = id_.strip(), sentence.strip()
        if sentence in owner:
            repeated.add(sentence)
        else:
            owner[sentence] = id_
    return {s: id_ for s, id_ in owner.items() if s not in repeated}


def candidate_scores(
    mined: Iterable[Tuple[float, str, str]],
    src_ids: Mapping[str, str],
    trg_ids: Mapping[str, str],
) -> Dict[Pair, float]:
    """(margin, source sentence, target sentence) -> {(source id, target id): margin}, in
    mined order, a pair's highest margin kept (``read_candidate2score``)."""
    scores: Dict[Pair, float] = {}
    for margin, src, trg in mined:
        src, trg = src.strip(), trg.strip()
        if src in src_ids and trg in trg_ids:
            pair = (src_ids[src], trg_ids[trg])
            scores[pair] = max(margin, scores.get(pair, margin))
    return scores


def best_threshold(candidates: Mapping[Pair, float], gold: Set[Pair]) -> float:
    """``bucc_optimize``: the margin threshold of the best F1 against ``gold``."""
    if not gold:
        raise VecoUserError("no gold pairs: the threshold is chosen on BUCC's sample (dev) gold")
    items = sorted(candidates.items(), key=lambda item: -item[1])
    correct, best_f1, threshold = 0, 0.0, 0.0
    for i, (pair, margin) in enumerate(items):
        correct += pair in gold
        if correct:
            precision, recall = correct / (i + 1), correct / len(gold)
            f1 = 2 * precision * recall / (precision + recall)
            if f1 > best_f1:
                best_f1 = f1
                following = items[i + 1][1] if i + 1 < len(items) else margin
                threshold = (margin + following) / 2
    return threshold


def extract(candidates: Mapping[Pair, float], threshold: float) -> List[str]:
    """The candidate pairs with a margin at least ``threshold``, as prediction lines
    ``src_id<TAB>trg_id`` (``bucc_extract``)."""
    return [f"{src}\t{trg}" for (src, trg), margin in candidates.items() if margin >= threshold]


def mine_candidates(
    src: Tuple[Sequence[str], Sequence[str]],
    trg: Tuple[Sequence[str], Sequence[str]],
    embed: Callable[[List[str]], Tensor],
    k: int = NEIGHBOURHOOD,
) -> Dict[Pair, float]:
    """Steps 1-3 on one split: ``src`` and ``trg`` are (ids, sentences) of BUCC's files
    (``id<TAB>sentence`` lines split), ``embed`` maps distinct sentences to (N, C)."""
    src_unique, _ = unique([s.strip() for s in src[1]])
    trg_unique, _ = unique([s.strip() for s in trg[1]])
    mined = mine(embed(src_unique), embed(trg_unique), k)
    named = ((margin, src_unique[i], trg_unique[j]) for margin, i, j in mined)
    return candidate_scores(named, sentence_ids(*src), sentence_ids(*trg))


def mine_split(split: BuccSplit, embed: Callable[[List[str]], Tensor]) -> Dict[Pair, float]:
    """:func:`mine_candidates` of a split as :func:`..corpora.bucc.read_split` reads it."""
    source, english = split.source, split.english
    return mine_candidates((source.ids, source.sentences), (english.ids, english.sentences), embed)
