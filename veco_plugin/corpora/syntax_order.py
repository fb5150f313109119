"""The ordering model of T_syn: a log-linear distribution over the orders of a head's
family (the head and its dependents), after Wang & Eisner (TACL 2016, "The Galactic
Dependencies Treebanks", §4: permute the dependents of each noun and verb by a model
trained on a target language's treebank). Pure math; trees and files are
:mod:`.syntax`'s.

**Nodes.** A family of ``n`` nodes is given by their labels (:func:`node_label`): the
head is ``@`` and its UPOS, a dependent its universal relation and UPOS (punctuation its
form: ``.`` and ``,`` go to different places). A family's class ``c`` is the head's: ``N``
(NOUN, PROPN) or ``V`` (VERB).

**Model.** An order is a permutation ``π`` of the nodes (``π_1`` first). With ``φ(a, b)``
the features of node ``a`` preceding node ``b`` (:func:`pair_features`: the two
relations, the two relation+tag pairs, the two tags, and ``a``'s relation+tag preceding
anything; each conjoined with ``c``) and weights ``θ``::

    s(a, b)    = θ · φ(a, b)                                            (1)
    p_θ(π | x) = exp(Σ_{i<j} s(π_i, π_j)) / Z_θ(x)                      (2)
    Z_θ(x)     = Σ_{π ∈ S_n} exp(Σ_{i<j} s(π_i, π_j))

Choosing ``π_1 = a`` first from the remaining set ``R`` adds ``Σ_{b∈R∖a} s(a, b)``
whatever the later choices, so ``Z`` is a sum over subsets (the left-to-right order
built one node at a time), ``O(2^n n)``::

    L(∅) = 0,   L(R) = logsumexp_{a∈R} [ Σ_{b∈R∖a} s(a, b) + L(R∖a) ]      (3)
    log Z_θ(x) = L({1..n})

and a sample is exact: ``π_1 = a`` with probability ``exp(Σ_{b∈R∖a} s(a,b) + L(R∖a) −
L(R))``, then the same on ``R∖a`` (:func:`sample_order`).

**Training** (:func:`train`): maximum conditional likelihood of the families' observed
orders with an L2 penalty, ``min_θ Σ_f −log p_θ(π_f | x_f) / F + λ/2 ‖θ‖²``, by L-BFGS
in float64 (torch). Families of more than ``max_nodes`` nodes are left out of training;
families with equal label multisets share ``Z`` (computed once per multiset).

**Baselines** (:func:`uniform_log_prob`, :class:`SideModel`): the uniform order,
``−log n!``; and each dependent on its relation's side of the head with the training
rate of that side (its majority side, as a probability), the order within a side
uniform: ``Σ_d log p(side_d | rel_d, c) − log |L|! − log |R|!``.
"""

import math
from dataclasses import dataclass, field
from itertools import combinations
from typing import Dict, List, Sequence, Tuple

import numpy as np

HEAD = "@"
NOUN_TAGS = frozenset({"NOUN", "PROPN"})
VERB_TAGS = frozenset({"VERB"})

Family = Tuple[str, Tuple[str, ...]]
"""(class ``N``/``V``, node labels in surface order)."""


def head_class(upos: str) -> str:
    """``N``, ``V`` or "" (a head whose family is not permuted)."""
    return "N" if upos in NOUN_TAGS else "V" if upos in VERB_TAGS else ""


def node_label(rel: str, upos: str, form: str) -> str:
    """``rel|tag``: ``rel`` the universal relation (``nsubj:pass`` -> ``nsubj``, ``@`` for
    the head), ``tag`` the UPOS, or ``PUNCT`` and the form for punctuation."""
    tag = f"PUNCT{form}" if upos == "PUNCT" else upos
    return f"{rel.split(':')[0]}|{tag}"


def pair_features(cls: str, a: str, b: str) -> Tuple[str, ...]:
    """φ(a, b): the features of node label ``a`` preceding ``b`` in a class-``cls`` family."""
    ra, _, ta = a.partition("|")
    rb, _, tb = b.partition("|")
    return (f"{cls}r{ra}<{rb}", f"{cls}x{a}<{b}", f"{cls}t{ta}<{tb}", f"{cls}u{a}<")


def subset_tables(n: int) -> Tuple[np.ndarray, List[Tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """Masks ``(2^n, n)`` of every subset, and per size ``k`` = 1..n: the subsets of that
    size ``(m,)``, their members ``(m, k)`` and each subset less each member ``(m, k)``
    (the terms of eq. 3)."""
    codes = np.arange(1 << n)
    masks = ((codes[:, None] >> np.arange(n)) & 1).astype(np.float64)
    sizes = masks.sum(1)
    layers = []
    for k in range(1, n + 1):
        subsets = codes[sizes == k]
        members = np.stack([np.flatnonzero(masks[s]) for s in subsets])
        layers.append((subsets, members, subsets[:, None] ^ (1 << members)))
    return masks, layers


def log_partition_table(scores: np.ndarray) -> np.ndarray:
    """``L(R)`` of eq. 3 for every subset ``R`` (bit ``i`` of the index: node ``i``), from
    pair scores ``scores[a, b] = s(a, b)`` ``(n, n)``, the diagonal ignored."""
    n = len(scores)
    s = scores * (1 - np.eye(n))
    masks, layers = subset_tables(n)
    gain = masks @ s.T  # (2^n, n): Σ_{b∈R} s(a, b) for subset R, node a
    table = np.zeros(1 << n)
    for subsets, members, rest in layers:
        terms = gain[subsets[:, None], members] + table[rest]
        top = terms.max(1, keepdims=True)
        table[subsets] = (top + np.log(np.exp(terms - top).sum(1, keepdims=True)))[:, 0]
    return table


def order_score(scores: np.ndarray, order: Sequence[int]) -> float:
    """``Σ_{i<j} s(π_i, π_j)`` of eq. 2."""
    return float(sum(scores[a, b] for a, b in combinations(order, 2)))


def sample_order(scores: np.ndarray, rng: np.random.Generator, table=None) -> List[int]:
    """An exact sample of eq. 2: ``π`` as a list of node indices, first to last."""
    table = log_partition_table(scores) if table is None else table
    n = len(scores)
    left = list(range(n))
    code = (1 << n) - 1
    order = []
    while left:
        logits = np.array(
            [sum(scores[a, b] for b in left if b != a) + table[code ^ (1 << a)] for a in left]
        )
        p = np.exp(logits - table[code])
        a = left[int(rng.choice(len(left), p=p / p.sum()))]
        order.append(a)
        left.remove(a)
        code ^= 1 << a
    return order


def uniform_log_prob(n: int) -> float:
    return -math.lgamma(n + 1)


@dataclass
class OrderModel:
    """θ of eq. 1 by feature name; features never seen in training weigh 0."""

    weights: Dict[str, float] = field(default_factory=dict)
    max_nodes: int = 8
    _tables: Dict[Family, Tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)

    def pair_scores(self, cls: str, labels: Sequence[str]) -> np.ndarray:
        """``(n, n)``: ``s(a, b)`` of eq. 1 for the family's nodes."""
        n = len(labels)
        out = np.zeros((n, n))
        for a in range(n):
            for b in range(n):
                if a != b:
                    feats = pair_features(cls, labels[a], labels[b])
                    out[a, b] = sum(self.weights.get(f, 0.0) for f in feats)
        return out

    def _prepared(self, cls: str, labels: Tuple[str, ...]) -> Tuple[np.ndarray, np.ndarray]:
        key = (cls, labels)
        if key not in self._tables:
            scores = self.pair_scores(cls, labels)
            self._tables[key] = (scores, log_partition_table(scores))
        return self._tables[key]

    def log_prob(self, cls: str, labels: Sequence[str]) -> float:
        """``log p_θ`` of the surface order ``labels`` (eq. 2)."""
        scores, table = self._prepared(cls, tuple(sorted(labels)))
        canonical = sorted(range(len(labels)), key=lambda i: labels[i])
        rank = {i: r for r, i in enumerate(canonical)}
        return order_score(scores, [rank[i] for i in range(len(labels))]) - table[-1]

    def sample(self, cls: str, labels: Sequence[str], rng: np.random.Generator) -> List[int]:
        """A sampled order of the family: indices into ``labels``, first to last."""
        canonical = sorted(range(len(labels)), key=lambda i: labels[i])
        scores, table = self._prepared(cls, tuple(labels[i] for i in canonical))
        return [canonical[i] for i in sample_order(scores, rng, table)]

    def to_json(self) -> Dict:
        return {"max_nodes": self.max_nodes, "weights": self.weights}

    @classmethod
    def from_json(cls, data: Dict) -> "OrderModel":
        return cls(dict(data["weights"]), int(data["max_nodes"]))


def _grouped(families: Sequence[Family], max_nodes: int):
    """n -> (signatures, {signature: index}, [(signature index, canonical order, count)])."""
    groups: Dict[int, Tuple[List[Family], Dict[Family, int], Dict[Tuple, int]]] = {}
    for cls, labels in families:
        n = len(labels)
        if not 2 <= n <= max_nodes:
            continue
        sigs, index, observed = groups.setdefault(n, ([], {}, {}))
        canonical = sorted(range(n), key=lambda i: labels[i])
        sig = (cls, tuple(labels[i] for i in canonical))
        if sig not in index:
            index[sig] = len(sigs)
            sigs.append(sig)
        rank = {i: r for r, i in enumerate(canonical)}
        key = (index[sig], tuple(rank[i] for i in range(n)))
        observed[key] = observed.get(key, 0) + 1
    return groups


def train(
    families: Sequence[Family], l2: float = 1e-3, max_nodes: int = 8, max_iter: int = 200
) -> Tuple[OrderModel, Dict[str, float]]:
    """θ by L-BFGS on the families' observed orders (module docstring); returns the
    model and ``{"families", "features", "nll"}`` (the mean negative log-likelihood)."""
    import torch

    groups = _grouped(families, max_nodes)
    names: Dict[str, int] = {}
    batches = []
    total = 0
    for n, (sigs, _, observed) in sorted(groups.items()):
        pairs = [(a, b) for a in range(n) for b in range(n)]
        idx = np.zeros((len(sigs), n, n, 4), dtype=np.int64)
        for s, (cls, labels) in enumerate(sigs):
            for a, b in pairs:
                if a != b:
                    feats = pair_features(cls, labels[a], labels[b])
                    idx[s, a, b] = [names.setdefault(f, len(names) + 1) for f in feats]
        keys = list(observed)
        sig = torch.tensor([k[0] for k in keys])
        order = torch.tensor([k[1] for k in keys])
        count = torch.tensor([observed[k] for k in keys], dtype=torch.float64)
        total += int(count.sum())
        masks, layers = subset_tables(n)
        batches.append((torch.from_numpy(idx), sig, order, count, torch.from_numpy(masks), layers))
    theta = torch.zeros(len(names), dtype=torch.float64, requires_grad=True)

    def objective() -> torch.Tensor:
        nll = theta.new_zeros(())
        padded = torch.cat([theta.new_zeros(1), theta])  # index 0: no feature (the diagonal)
        for idx, sig, order, count, masks, layers in batches:
            scores = padded[idx].sum(-1)  # (B, n, n), diagonal 0
            gain = torch.einsum("bay,sy->bsa", scores, masks)  # (B, 2^n, n)
            table = scores.new_zeros(len(scores), len(masks))
            for subsets, members, rest in layers:
                s_, m_, r_ = (torch.from_numpy(x) for x in (subsets, members, rest))
                terms = gain[:, s_[:, None], m_] + table[:, r_]  # (B, m, k)
                table = table.index_copy(1, s_, torch.logsumexp(terms, -1))
            i, j = torch.triu_indices(order.shape[1], order.shape[1], 1)
            seen = scores[sig[:, None], order[:, i], order[:, j]].sum(-1)  # (O,)
            nll = nll + (count * (table[sig, -1] - seen)).sum()
        return nll / max(total, 1) + 0.5 * l2 * (theta**2).sum()

    optimizer = torch.optim.LBFGS(
        [theta], max_iter=max_iter, line_search_fn="strong_wolfe", tolerance_grad=1e-6
    )

    def closure():
        optimizer.zero_grad()
        loss = objective()
        loss.backward()
        return loss

    optimizer.step(closure)
    with torch.no_grad():
        final = float(objective())
    values = theta.detach().numpy()
    weights = {f: float(values[i - 1]) for f, i in names.items() if values[i - 1] != 0.0}
    return OrderModel(weights, max_nodes), {
        "families": total,
        "features": len(names),
        "nll": final,
    }


@dataclass
class SideModel:
    """The side baseline: ``p(left | rel, c)`` from training counts (add-one smoothed)."""

    left: Dict[Tuple[str, str], Tuple[int, int]] = field(default_factory=dict)

    @classmethod
    def fit(cls, families: Sequence[Family]) -> "SideModel":
        counts: Dict[Tuple[str, str], List[int]] = {}
        for c, labels in families:
            head = next(i for i, x in enumerate(labels) if x.startswith(HEAD + "|"))
            for i, x in enumerate(labels):
                if i != head:
                    counts.setdefault((c, x.partition("|")[0]), [0, 0])[i > head] += 1
        return cls({k: (v[0], v[1]) for k, v in counts.items()})

    def log_prob(self, cls: str, labels: Sequence[str]) -> float:
        head = next(i for i, x in enumerate(labels) if x.startswith(HEAD + "|"))
        total = 0.0
        for i, x in enumerate(labels):
            if i != head:
                left, right = self.left.get((cls, x.partition("|")[0]), (0, 0))
                seen = right if i > head else left
                total += math.log((seen + 1) / (left + right + 2))
        return total - math.lgamma(head + 1) - math.lgamma(len(labels) - head)
