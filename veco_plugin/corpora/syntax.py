"""T_syn (ALIGN-MLM App. F, after Deshpande et al. 2021 and Wang & Eisner 2016): English
re-ordered to a target language's syntax (here French) by re-ordering, for every noun and
verb head of a dependency tree, its family (the head and its dependents) with an order
sampled from :mod:`.syntax_order`'s model trained on the target's treebanks.

**Trees** (:func:`read_trees`): CoNLL-U sentences over the words XTREME's ``udpos``
files hold (:mod:`.ud_xtreme`; the words and tags are exactly
:func:`~.ud_xtreme.xtreme_words`'): a multiword token (``didn't``, ``du``) is one node,
the word the converter keeps as the range's head gives it its tag, relation and head;
a word whose head is inside the range hangs from the range. Relations are universal
(``obl:tmod`` -> ``obl``).

**The transformation** (:func:`syntax_order`): the tree is linearized from its root:
each node's family is laid out in its order and each dependent replaced by its own
subtree's layout. A noun (NOUN, PROPN) or verb (VERB) head's family of 2 to
:data:`MAX_SAMPLED` nodes is laid out in an order sampled from the model; every other
family (other heads, and the rare larger ones) in its English order. Every subtree comes
out contiguous (a non-projective English tree comes out projective), and the result is a
permutation of the sentence's words; tags move with their words.

**Randomness.** The draw of a sentence is seeded by ``seed`` and its words (SHA-256 of
the words joined by spaces): one sentence always gets one order (the POS train
sentences, also in the pre-training text, come out alike in both), two sentences draw
independently, and a head's family comes out in more than one order across the
sentences it occurs in.
"""

import hashlib
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import VecoUserError
from .syntax_order import HEAD, Family, OrderModel, SideModel, head_class, node_label
from .syntax_order import train as train_model
from .syntax_order import uniform_log_prob
from .tagging import conllu_rows, is_conllu
from .ud_xtreme import ConverterFailure, _parents, conllu_language, range_head, spans, xtreme_words

MAX_SAMPLED = 10
"""the largest family sampled (2^n subsets in eq. 3); larger ones keep their order."""
_HEAD, _DEPREL = 6, 7


@dataclass(frozen=True)
class Tree:
    """A sentence's words and UPOS ``tags`` (W,), each word's ``heads`` index (-1: the
    root) and universal relation ``rels``; ``where``: ``FILE:LINE``."""

    words: Tuple[str, ...]
    tags: Tuple[str, ...]
    heads: Tuple[int, ...]
    rels: Tuple[str, ...]
    where: str


def tree_of(rows: Sequence[Sequence[str]], lang: str, where: str) -> Optional[Tree]:
    """The tree of one CoNLL-U sentence (``rows`` as :func:`~.ud_xtreme.spans` takes them)
    over XTREME's words; None for a sentence XTREME drops."""
    read = xtreme_words(rows, lang)
    if read is None:
        return None
    words = [r for r in rows if r[0].isdigit()]
    row = {int(r[0]): r for r in words}
    upos = {i: r[3] for i, r in row.items()}
    parents = _parents(words)  # as xtreme_words picks a multiword token's word
    node: Dict[int, int] = {}
    keeper: List[int] = []
    for k, (first, last, _) in enumerate(spans(rows)):
        span = range(first, last + 1)
        head = range_head(span, upos, parents, lang) if last > first else first
        if row[head][_HEAD].isdigit() and int(row[head][_HEAD]) in span:
            head = next((w for w in span if int(row[w][_HEAD]) not in span), head)
        node.update({w: k for w in span})
        keeper.append(head)
    heads = []
    for k, w in enumerate(keeper):
        h = row[w][_HEAD]
        if not h.isdigit():
            raise VecoUserError(f"{where}: word {w} has no head (column 7 reads {h!r})")
        heads.append(-1 if h == "0" or node[int(h)] == k else node[int(h)])
    rels = tuple(row[w][_DEPREL].split(":")[0] for w in keeper)
    return Tree(read[0], read[1], tuple(heads), rels, where)


def read_trees(path: str) -> List[Tree]:
    """The trees of CoNLL-U file ``path`` (sentences XTREME drops left out)."""
    if not is_conllu(path):
        raise VecoUserError(f"{path}: T_syn needs dependency trees: give a CoNLL-U file (*.conllu)")
    lang = conllu_language(path)
    trees = []
    try:
        for start, rows in conllu_rows(path):
            tree = tree_of(rows, lang, f"{path}:{start}")
            if tree is not None:
                trees.append(tree)
    except ConverterFailure as exc:
        raise VecoUserError(f"{path}: {exc}: XTREME's converter stops on this file") from None
    return trees


def children(tree: Tree) -> Tuple[List[List[int]], List[int]]:
    """Each word's dependents and the root words, in surface order."""
    kids: List[List[int]] = [[] for _ in tree.words]
    roots: List[int] = []
    for i, h in enumerate(tree.heads):
        (kids[h] if h >= 0 else roots).append(i)
    return kids, roots


def family_labels(tree: Tree, head: int, nodes: Sequence[int]) -> Tuple[str, ...]:
    """The node labels (:func:`~.syntax_order.node_label`) of ``head``'s family ``nodes``."""
    return tuple(
        node_label(HEAD if i == head else tree.rels[i], tree.tags[i], tree.words[i]) for i in nodes
    )


def families(tree: Tree) -> List[Family]:
    """The noun and verb families of ``tree`` with at least one dependent, each as
    (class, labels in surface order): the training data of the ordering model."""
    kids, _ = children(tree)
    out = []
    for h, deps in enumerate(kids):
        cls = head_class(tree.tags[h])
        if cls and deps:
            out.append((cls, family_labels(tree, h, sorted(deps + [h]))))
    return out


def sentence_rng(seed: int, words: Sequence[str]) -> np.random.Generator:
    """The generator of one sentence's draw: ``seed`` and the sentence's words."""
    digest = hashlib.sha256(" ".join(words).encode("utf-8")).digest()
    return np.random.default_rng([seed, int.from_bytes(digest[:8], "little")])


def syntax_order(tree: Tree, model: OrderModel, seed: int) -> List[int]:
    """T_syn as a permutation: the derived sentence is ``[tree.words[i] for i in order]``."""
    rng = sentence_rng(seed, tree.words)
    kids, roots = children(tree)
    order: List[int] = []
    todo: List[Tuple[int, bool]] = [(r, False) for r in reversed(roots)]
    while todo:
        i, placed = todo.pop()
        if placed:
            order.append(i)
            continue
        nodes = sorted(kids[i] + [i])
        cls = head_class(tree.tags[i])
        if cls and 2 <= len(nodes) <= MAX_SAMPLED:
            sampled = model.sample(cls, family_labels(tree, i, nodes), rng)
            nodes = [nodes[k] for k in sampled]
        todo += [(x, x == i) for x in reversed(nodes)]
    return order


def french_model(
    paths: Sequence[str], l2: float = 1e-3, max_nodes: int = 8
) -> Tuple[OrderModel, Dict[str, float]]:
    """The ordering model trained on the trees of ``paths`` (the target's treebanks)."""
    fams = [f for path in paths for tree in read_trees(path) for f in families(tree)]
    if not fams:
        raise VecoUserError(f"--syn-treebank {' '.join(paths)}: no noun or verb family to learn")
    return train_model(fams, l2=l2, max_nodes=max_nodes)


def held_out_log_likelihood(
    model: OrderModel, side: SideModel, fams: Iterable[Family]
) -> Dict[str, float]:
    """Mean log-likelihood per family of the observed orders under the model, the side
    baseline and the uniform order, over the families of 2 to ``model.max_nodes`` nodes."""
    kept = [f for f in fams if 2 <= len(f[1]) <= model.max_nodes]
    if not kept:
        return {"families": 0}
    totals = {
        "model": sum(model.log_prob(c, x) for c, x in kept),
        "side": sum(side.log_prob(c, x) for c, x in kept),
        "uniform": sum(uniform_log_prob(len(x)) for _, x in kept),
    }
    return {"families": len(kept), **{k: v / len(kept) for k, v in totals.items()}}


def before_head_rate(fams: Iterable[Family], cls: str, label: str) -> Tuple[float, int]:
    """The share of dependents labelled ``label`` (``rel|tag``) that precede their head
    in class-``cls`` families, and how many there are."""
    before = total = 0
    for c, labels in fams:
        if c != cls:
            continue
        head = next(i for i, x in enumerate(labels) if x.startswith(HEAD + "|"))
        for i, x in enumerate(labels):
            if x == label:
                total += 1
                before += i < head
    return (before / total if total else float("nan")), total


def sampled_families(model: OrderModel, fams: Iterable[Family], seed: int) -> List[Family]:
    """Each family re-ordered by one draw of ``model`` (larger ones as they are)."""
    rng = np.random.default_rng(seed)
    out = []
    for cls, labels in fams:
        if 2 <= len(labels) <= MAX_SAMPLED:
            labels = tuple(labels[i] for i in model.sample(cls, labels, rng))
        out.append((cls, labels))
    return out
