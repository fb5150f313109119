"""A paraphrase-style task from the gettext corpora (``veco-gettext-paraphrase``):
is the second sentence the translation of the first, or a hard negative from the
same catalog?

Input: ``veco-gettext-corpus`` directories (``{split}.en``, ``{split}.<lang>``,
``catalogs.json``, whose per-split catalog counts give the catalog of every line).
For each pair (e_i, t_i) of a catalog, two examples:

    (e_i, t_i, 1)    the translation
    (e_i, t_j, 0)    t_j the translation of another entry of the same catalog, the
                     nearest in length to t_i among ``candidates`` random ones
                     (different text): same domain, same terminology, similar size

An example's translation (plug-in fine-tuning) swaps the languages of both sides:
(e_i, t_j) -> (t_i, e_j), with the same label. The files, PAWS-X layout
(``veco-prepare-sentence-prediction --layout pawsx`` binarizes them)::

    train.tsv  valid.tsv   (en, <train-lang>) from the train-lang corpus, + .trans.tsv
    test_en.tsv            (en, <train-lang>) from its test split
    test_<lang>.tsv        (<lang>, en): test_<train-lang> is test_en translated; other
                           languages from their own corpus' test split, dropping
                           English sentences that are in the training examples

so an English-first model is evaluated zero-shot on German- and French-first files.
"""

from __future__ import annotations

import json
import os
import random
from typing import Dict, List, Optional, Sequence, Set, Tuple

from ..errors import VecoUserError
from ..outputs import atomic_path
from .gettext import SRC_LANG
from .text import read_lines_strict
from .xtreme import Example, write_tsv

Pair = Tuple[str, str]
# an example as indices into one catalog: (first pair, candidate pair)
Link = Tuple[int, int]


def catalog_counts(corpus: str, split: str) -> Dict[str, int]:
    """{catalog: lines} of ``split`` in ``corpus``'s catalogs.json, in file order."""
    report_path = os.path.join(corpus, "catalogs.json")
    if not os.path.isdir(corpus):
        raise VecoUserError(f"--corpus {corpus}: no such directory (a veco-gettext-corpus output)")
    if not os.path.isfile(report_path):
        raise VecoUserError(f"{report_path} not found: --corpus takes a veco-gettext-corpus output")
    fix = "rebuild it with veco-gettext-corpus"
    try:
        with open(report_path, encoding="utf-8") as f:
            counts = json.load(f)["splits"][split]["catalogs"]
    except UnicodeDecodeError as exc:
        raise VecoUserError(f"{report_path}: not valid UTF-8 ({exc.reason}); {fix}") from None
    except json.JSONDecodeError as exc:
        raise VecoUserError(f"{report_path}: not JSON ({exc}); {fix}") from None
    except (KeyError, TypeError):
        raise VecoUserError(
            f"{report_path} has no splits.{split}.catalogs: not the catalogs.json of "
            f"veco-gettext-corpus; {fix}"
        ) from None
    if not isinstance(counts, dict) or not all(
        isinstance(n, int) and n >= 0 for n in counts.values()
    ):
        raise VecoUserError(f"{report_path}: splits.{split}.catalogs is not {{name: lines}}; {fix}")
    return counts


def read_catalog_groups(corpus: str, lang: str, split: str) -> List[List[Pair]]:
    """The pairs of ``split`` grouped by catalog, in the corpus' order."""
    counts = catalog_counts(corpus, split)
    if not os.path.isfile(os.path.join(corpus, f"{split}.{lang}")):
        with open(os.path.join(corpus, "catalogs.json"), encoding="utf-8") as f:
            made_for = json.load(f).get("tgt_lang")
        if made_for and made_for != lang:
            raise VecoUserError(
                f"--corpus {lang}={corpus} is the {made_for} corpus (catalogs.json): "
                f"--corpus {made_for}={corpus}, and its own directory for {lang}"
            )
    en = list(read_lines_strict(os.path.join(corpus, f"{split}.en")))
    tgt = list(read_lines_strict(os.path.join(corpus, f"{split}.{lang}")))
    if len(en) != len(tgt) or len(en) != sum(counts.values()):
        raise VecoUserError(
            f"{corpus}: {split}.en has {len(en)} lines, {split}.{lang} {len(tgt)}, "
            f"catalogs.json counts {sum(counts.values())}: rebuild it with veco-gettext-corpus"
        )
    groups, start = [], 0
    for n in counts.values():
        groups.append(list(zip(en[start : start + n], tgt[start : start + n])))
        start += n
    return groups


def hard_negatives(pairs: Sequence[Pair], rng: random.Random, candidates: int = 16) -> List[Link]:
    """(i, j) for every pair i that has a negative j in ``pairs``: the candidate whose
    translation is nearest in length (words) to t_i, among ``candidates`` random others
    whose translation differs from t_i."""
    links = []
    for i, (_, t) in enumerate(pairs):
        draws = (rng.randrange(len(pairs)) for _ in range(2 * candidates))
        pool = [j for j in draws if pairs[j][1] != t][:candidates]
        if not pool:
            continue
        n = len(t.split())
        links.append((i, min(pool, key=lambda j: (abs(len(pairs[j][1].split()) - n), j))))
    return links


def examples(
    groups: Sequence[Sequence[Pair]],
    rng: random.Random,
    limit: Optional[int] = None,
    candidates: int = 16,
) -> Tuple[List[Example], List[Example]]:
    """(en-first examples, their translations), positives and negatives interleaved,
    at most ``limit`` pairs (2 * limit examples), shuffled."""
    links = [
        (g, i, j)
        for g, pairs in enumerate(groups)
        for i, j in hard_negatives(pairs, rng, candidates)
    ]
    rng.shuffle(links)
    first, translated = [], []
    for g, i, j in links[:limit]:
        (e_i, t_i), (e_j, t_j) = groups[g][i], groups[g][j]
        first += [Example(e_i, t_i, "1"), Example(e_i, t_j, "0")]
        translated += [Example(t_i, e_i, "1"), Example(t_i, e_j, "0")]
    return first, translated


def swap(rows: Sequence[Example]) -> List[Example]:
    return [Example(e.second or "", e.first, e.label) for e in rows]


def check_settings(
    corpora: Dict[str, str],
    train_lang: str,
    max_train: Optional[int],
    max_eval: Optional[int],
    candidates: int,
) -> None:
    """Refuse what :func:`build` cannot make files from, before any reading."""
    if SRC_LANG in corpora:
        raise VecoUserError(
            f"--corpus {SRC_LANG}=...: {SRC_LANG} is the English side of every corpus; "
            "name each corpus by its other language (--corpus de=DIR)"
        )
    if train_lang not in corpora:
        raise VecoUserError(f"--train-lang {train_lang}: no --corpus {train_lang}=DIR given")
    for flag, value in (("--max-train", max_train), ("--max-eval", max_eval)):
        if value is not None and value < 1:
            raise VecoUserError(f"{flag} must be >= 1 (pairs), got {value}; leave it out for all")
    if candidates < 1:
        raise VecoUserError(f"--candidates must be >= 1, got {candidates}")


def _write_tsv(path: str, rows: Sequence[Example]) -> None:
    """:func:`write_tsv`, atomically (``atomic_path``)."""
    with atomic_path(path) as part:
        write_tsv(part, rows)


def build(
    corpora: Dict[str, str],
    train_lang: str,
    output: str,
    seed: int = 1,
    max_train: Optional[int] = None,
    max_eval: Optional[int] = None,
    candidates: int = 16,
) -> Dict[str, int]:
    """Write the TSVs (see the module docstring) into ``output``; returns the example
    count of each file. Nothing is written when a file would hold no example."""
    check_settings(corpora, train_lang, max_train, max_eval, candidates)
    rng = random.Random(seed)
    files: Dict[str, List[Example]] = {}
    corpus = corpora[train_lang]
    for split, limit in (("train", max_train), ("valid", max_eval), ("test", max_eval)):
        rows, trans = examples(
            read_catalog_groups(corpus, train_lang, split), rng, limit, candidates
        )
        name = "test_en" if split == "test" else split
        files[f"{name}.tsv"], files[f"{name}.trans.tsv"] = rows, trans
    files[f"test_{train_lang}.tsv"] = files["test_en.trans.tsv"]
    files[f"test_{train_lang}.trans.tsv"] = files["test_en.tsv"]
    seen: Set[str] = {e.first for e in files["train.tsv"]}
    for lang, corpus in sorted(corpora.items()):
        if lang == train_lang:
            continue
        groups = [
            [p for p in pairs if p[0] not in seen]
            for pairs in read_catalog_groups(corpus, lang, "test")
        ]
        rows, trans = examples(groups, rng, max_eval, candidates)
        files[f"test_{lang}.tsv"], files[f"test_{lang}.trans.tsv"] = trans, rows
    for name, rows in files.items():
        if not rows:
            raise VecoUserError(
                f"no examples for {name}: no catalog of the corpus has two pairs with "
                "different translations (a negative comes from the same catalog), or "
                "every English sentence is in train.tsv; use larger corpora"
            )
    os.makedirs(output, exist_ok=True)
    for name, rows in files.items():
        _write_tsv(os.path.join(output, name), rows)
    return {name: len(rows) for name, rows in files.items()}
