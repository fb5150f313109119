"""Conformance of ``veco-prepare-udpos`` with XTREME's own ``udpos`` files.

Builds each ``<split>-<lang>.tsv`` from UD treebanks at the release XTREME took (UD 2.5:
``UD_<Language>-<Treebank>`` folders, e.g. each GitHub repository at tag ``r2.5``) and
compares it, sentence for sentence, word for word and tag for tag, with XTREME's output
kept with its labels (salesforce/MPT ``data/udpos/``). Sentences are aligned with
difflib (a treebank absent here shows as XTREME sentences left unmatched); a pair of
aligned sentences that differ is counted by kind (words differ, tags differ: which tags).
A second table measures what the old reading (multiword tokens split into their words,
no sentence dropped, words as published) changed on the test files.

::

    python benchmarks/udpos_conformance.py --ud /tmp/ud25 --xtreme /tmp/mpt-udpos \\
        --languages en,de,fr,es,it,pt,tr,fa,ar

Prints Markdown tables (examples/xtreme/udpos_conformance.md holds a run's output).
"""

import argparse
import difflib
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import List, Sequence, Tuple

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


def reading_effect(paths: Sequence[str]) -> Tuple[int, int, int, int, int, int]:
    """What XTREME's conversion changes against the reading before it (every syntactic
    word, multiword ranges and empty nodes skipped, no sentence dropped), over ``paths``:
    (sentences, dropped, kept sentences whose words differ, their words in the old
    reading, XTREME's words of the kept sentences, fused tokens among them)."""
    sentences = dropped = differ = old_words = new_words = fused = 0
    for path in paths:
        lang = conllu_language(path)
        for _, rows in conllu_rows(path):
            sentences += 1
            new = xtreme_words(rows, lang)
            if new is None:
                dropped += 1
                continue
            old = tuple(r[1] for r in rows if r[0].isdigit())
            differ += old != new[0]
            old_words += len(old)
            new_words += len(new[0])
            fused += sum(1 for r in rows if "-" in r[0])
    return sentences, dropped, differ, old_words, new_words, fused


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.2f} %" if whole else "-"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ud", required=True, help="folder of UD_<Language>-<Treebank> folders")
    p.add_argument("--xtreme", required=True, help="XTREME's udpos files with labels")
    p.add_argument("--languages", required=True, help="comma-separated, e.g. en,de,fr")
    args = p.parse_args()
    print(
        "| file | XTREME sentences | ours | identical (share of XTREME's) | XTREME words "
        "| tags equal (share) | differences |"
    )
    print("|---|---:|---:|---:|---:|---:|---|")
    effect = []
    for lang, paths in treebank_files(args.ud, args.languages.split(",")).items():
        for split, sentences in language_splits(paths):
            name = f"{split}-{lang}.tsv"
            theirs_path = os.path.join(args.xtreme, name)
            ours = [(s.words, s.tags) for s in sentences]
            if split == "test":
                effect.append((name, [p for p in paths if split_of(os.path.basename(p)) == "test"]))
            if not os.path.exists(theirs_path):
                print(f"| {name} | (absent here) | {len(ours)} | | | | |")
                continue
            c = compare(ours, read_xtreme(theirs_path))
            print(
                f"| {name} | {c.xtreme} | {c.ours} | {c.same} ({percent(c.same, c.xtreme)}) "
                f"| {c.words} | {c.tagged_same} ({percent(c.tagged_same, c.words)}) "
                f"| {c.differences()} |"
            )
    print(
        "\n| test file | sentences | dropped (`_` words) | kept sentences whose words change "
        "| words, old reading | words, XTREME's | multiword tokens (share of XTREME's words) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, paths in effect:
        n, dropped, differ, old_words, new_words, fused = reading_effect(paths)
        print(
            f"| {name} | {n} | {dropped} | {differ} ({percent(differ, n - dropped)}) "
            f"| {old_words} | {new_words} | {fused} ({percent(fused, new_words)}) |"
        )


if __name__ == "__main__":
    main()
