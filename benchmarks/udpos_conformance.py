"""Conformance of ``veco-prepare-udpos`` with XTREME's own ``udpos`` files.

Builds each ``<split>-<lang>.tsv`` from UD treebanks at the release XTREME took (UD 2.5:
``UD_<Language>-<Treebank>`` folders, e.g. each GitHub repository at tag ``r2.5``) and
compares it, sentence for sentence, word for word and tag for tag, with XTREME's output
kept with its labels (salesforce/MPT ``data/udpos/``). Sentences are aligned with
difflib (a treebank absent here shows as XTREME sentences left unmatched); a pair of
aligned sentences that differ is counted by kind (words differ, tags differ: which tags).
A second table measures what the old reading (multiword tokens split into their words,
no sentence dropped, words as published) changed on the test files, with a model-free
proxy of its effect on scores: a unigram tagger (each word's most frequent tag on the
language's dev split) scored on the test split in each reading.

::

    python benchmarks/udpos_conformance.py --ud /tmp/ud25 --xtreme /tmp/mpt-udpos \\
        --languages en,de,fr,es,it,pt,tr,fa,ar

Prints Markdown tables (examples/xtreme/udpos_conformance.md holds a run's output).
"""

import argparse
import difflib
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Dict, List, Sequence, Tuple

from veco_plugin.corpora.tagging import conllu_rows
from veco_plugin.corpora.ud_xtreme import conllu_language, xtreme_words
from veco_plugin.corpora.udpos_layout import language_splits, split_of, treebank_files

Sentence = Tuple[Tuple[str, ...], Tuple[str, ...]]


def read_xtreme(path: str) -> List[Sentence]:
    """XTREME's ``word<TAB>tag`` file as written (an empty word allowed)."""
    with open(path, encoding="utf-8", newline="\n") as f:
        text = f.read()
    out = []
    for block in text.rstrip("\n").split("\n\n"):
        rows = [line.split("\t", 1) for line in block.split("\n")]
        out.append((tuple(r[0] for r in rows), tuple(r[1] for r in rows)))
    return out


@dataclass
class Comparison:
    """Our file against XTREME's: sentences, identical ones, words and equal tags (in
    sentences of equal words), and the aligned differences by kind."""

    xtreme: int
    ours: int
    same: int = 0
    words: int = 0
    tagged_same: int = 0
    kinds: Counter = field(default_factory=Counter)
    tags: Counter = field(default_factory=Counter)  # "word: our tag->XTREME's"

    def differences(self) -> str:
        said = "; ".join(f"{k}: {n}" for k, n in self.kinds.items() if n)
        tags = ", ".join(f"{k} ×{n}" for k, n in self.tags.most_common(4))
        return (said + (f" ({tags})" if tags else "")) or "none"


def compare(ours: Sequence[Sentence], theirs: Sequence[Sentence]) -> Comparison:
    """The aligned comparison of ``ours`` with XTREME's ``theirs``."""
    c = Comparison(len(theirs), len(ours), words=sum(len(s[0]) for s in theirs))
    matcher = difflib.SequenceMatcher(None, [s[0] for s in ours], [s[0] for s in theirs], False)
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op != "equal":
            paired = min(a1 - a0, b1 - b0)
            c.kinds["words differ"] += paired
            c.kinds["only in XTREME's file"] += b1 - b0 - paired
            c.kinds["only in ours"] += a1 - a0 - paired
            continue
        for (words, a_tags), (_, b_tags) in zip(ours[a0:a1], theirs[b0:b1]):
            hits = sum(a == b for a, b in zip(a_tags, b_tags))
            c.tagged_same += hits
            c.same += hits == len(words)
            c.kinds["same words, tags differ"] += hits != len(words)
            c.tags.update(f"{w}: {a}->{b}" for w, a, b in zip(words, a_tags, b_tags) if a != b)
    return c


@dataclass
class Readings:
    """One language split read twice: ``old``, the reading before XTREME's conversion
    (every syntactic word, multiword ranges and empty nodes skipped), of the sentences
    XTREME keeps; ``new``, XTREME's words of the same sentences; ``dropped``: sentences
    XTREME drops (the old reading scored them); ``fused``: multiword tokens."""

    old: List[Sentence] = field(default_factory=list)
    new: List[Sentence] = field(default_factory=list)
    dropped: int = 0
    fused: int = 0


def readings(paths: Sequence[str]) -> Readings:
    """The two readings of ``paths`` pooled."""
    r = Readings()
    for path in paths:
        lang = conllu_language(path)
        for _, rows in conllu_rows(path):
            new = xtreme_words(rows, lang)
            if new is None:
                r.dropped += 1
                continue
            words = [row for row in rows if row[0].isdigit()]
            r.old.append((tuple(w[1] for w in words), tuple(w[3] for w in words)))
            r.new.append(new)
            r.fused += sum(1 for row in rows if "-" in row[0])
    return r


def unigram_accuracy(train: Sequence[Sentence], test: Sequence[Sentence]) -> float:
    """Word accuracy (%) on ``test`` of the tagger that gives a word its most frequent tag
    in ``train`` (an unseen word: the most frequent tag of all)."""
    by_word: Dict[str, Counter] = defaultdict(Counter)
    overall: Counter = Counter()
    for words, tags in train:
        for w, t in zip(words, tags):
            by_word[w][t] += 1
            overall[t] += 1
    best = {w: c.most_common(1)[0][0] for w, c in by_word.items()}
    default = overall.most_common(1)[0][0]
    pairs = [(w, t) for words, tags in test for w, t in zip(words, tags)]
    return 100 * sum(best.get(w, default) == t for w, t in pairs) / len(pairs)


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.2f} %" if whole else "-"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ud", required=True, help="folder of UD_<Language>-<Treebank> folders")
    p.add_argument("--xtreme", required=True, help="XTREME's udpos files with labels")
    p.add_argument("--languages", required=True, help="comma-separated, e.g. en,de,fr")
    args = p.parse_args()
    print(
        "| file | XTREME sentences | ours | identical (share of XTREME's / of ours) "
        "| XTREME words | tags equal (share) | differences |"
    )
    print("|---|---:|---:|---:|---:|---:|---|")
    effect = {}
    for lang, paths in treebank_files(args.ud, args.languages.split(",")).items():
        for split, sentences in language_splits(paths):
            name = f"{split}-{lang}.tsv"
            theirs_path = os.path.join(args.xtreme, name)
            ours = [(s.words, s.tags) for s in sentences]
            if split in ("dev", "test"):
                effect[lang, split] = readings(
                    [p for p in paths if split_of(os.path.basename(p)) == split]
                )
            if not os.path.exists(theirs_path):
                print(f"| {name} | (absent here) | {len(ours)} | | | | |")
                continue
            c = compare(ours, read_xtreme(theirs_path))
            print(
                f"| {name} | {c.xtreme} | {c.ours} | {c.same} ({percent(c.same, c.xtreme)} / "
                f"{percent(c.same, c.ours)}) "
                f"| {c.words} | {c.tagged_same} ({percent(c.tagged_same, c.words)}) "
                f"| {c.differences()} |"
            )
    print(
        "\n| test file | sentences | dropped (`_` words) | kept sentences whose words change "
        "| words, old reading | of them inside multiword tokens | words, XTREME's "
        "| multiword tokens | unigram tagger (dev -> test): old reading, XTREME's, difference |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for (lang, split), r in effect.items():
        if split != "test":
            continue
        n_old, n_new = (sum(len(s[0]) for s in x) for x in (r.old, r.new))
        inside = n_old - n_new + r.fused  # a token of k words: k - 1 words fewer, k inside
        differ = sum(o[0] != x[0] for o, x in zip(r.old, r.new))
        proxy = ""
        if (lang, "dev") in effect:
            dev = effect[lang, "dev"]
            before, after = unigram_accuracy(dev.old, r.old), unigram_accuracy(dev.new, r.new)
            proxy = f"{before:.2f}, {after:.2f}, {before - after:+.2f}"
        print(
            f"| test-{lang}.tsv | {len(r.old) + r.dropped} | {r.dropped} | {differ} "
            f"({percent(differ, len(r.old))}) | {n_old} | {inside} ({percent(inside, n_old)}) "
            f"| {n_new} | {r.fused} ({percent(r.fused, n_new)}) | {proxy} |"
        )


if __name__ == "__main__":
    main()
