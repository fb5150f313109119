"""One CoNLL-U sentence as XTREME's ``udpos`` download turns it into tagged words.

XTREME (google-research/xtreme ``scripts/download_data.sh``) runs, per treebank file,
``third_party/ud-conversion-tools/conllu_to_conll.py --lang LANG
--replace_subtokens_with_fused_forms --print_fused_forms`` and then ``utils_preprocess.py
--task udpos``. Their combined effect on a sentence, re-expressed here:

1. **Multiword tokens** (``3-4 zum``, the surface form of words 3 and 4) become one word:
   its surface form, tagged with the UPOS of the word of the range the converter keeps as
   the range's head. The head is the word with the fewest ancestors in the sentence's
   graph (basic heads *and* the enhanced ``DEPS`` heads, empty nodes left out); when
   several words share that fewest number, the first of them whose UPOS ranks highest in
   the language's precedence list (:data:`HEAD_PRECEDENCE`). A tied word whose UPOS the
   list lacks stops XTREME's converter: the whole file is missing from XTREME's data
   (:class:`ConverterFailure`). Empty nodes (``8.1``) are no words.
2. **Unreadable sentences dropped**: a sentence in which all words but at most one read
   ``_`` (treebanks distributed without their text) is left out.
3. **Words cleaned**: whitespace around a word is stripped, zero-width non-joiners
   (U+200C) and spaces inside it are removed.

``LANG`` is what XTREME passes: the file name's part before its first ``_``
(``de_gsd-ud-test.conllu``: ``de``), see :func:`conllu_language`.
"""

import os
from collections import deque
from typing import Dict, List, Optional, Sequence, Set, Tuple

ID, FORM, UPOS, HEAD, DEPS = 0, 1, 3, 6, 8
ZWNJ = "\u200c"
EMPTY_FORM = "_"

# UPOS tags, best first, that break a tie between a multiword token's highest words
# (conllu_to_conll.py); a language without its own list uses "default". French names
# the pre-UD-2 "CONJ", so a tie on a CCONJ word stops the converter there.
HEAD_PRECEDENCE: Dict[str, Tuple[str, ...]] = {
    lang: tuple(tags.split())
    for lang, tags in {
        "default": "VERB NOUN PROPN PRON ADJ NUM ADV INTJ AUX ADP DET PART CCONJ SCONJ X PUNCT",
        "es": "VERB AUX PRON ADP DET",
        "fr": "VERB AUX PRON NOUN ADJ ADV ADP DET PART SCONJ CONJ",
        "it": "VERB AUX ADV PRON ADP DET INTJ",
    }.items()
}

Words = Tuple[Tuple[str, ...], Tuple[str, ...]]


class ConverterFailure(Exception):
    """XTREME's converter stops on this sentence, so its whole file is absent from
    XTREME's data; the message says which token and why."""


def conllu_language(path: str) -> str:
    """The ``--lang`` XTREME's download gives the converter for ``path``: the file name
    up to its first ``_`` (``de_gsd-ud-test.conllu`` -> ``de``)."""
    return os.path.basename(path).split("_")[0]


def _parents(rows: Sequence[Sequence[str]]) -> Dict[int, Set[int]]:
    """Word index -> the indices of its heads: the basic head and every enhanced head
    that is a word or the root (an empty node ``8.1`` is none)."""
    parents: Dict[int, Set[int]] = {}
    for row in rows:
        heads = parents.setdefault(int(row[ID]), set())
        if row[HEAD].isdigit():
            heads.add(int(row[HEAD]))
        if row[DEPS] != "_":
            enhanced = (d.partition(":")[0] for d in row[DEPS].split("|"))
            heads.update(int(h) for h in enhanced if h.isdigit())
    return parents


def _ancestors(word: int, parents: Dict[int, Set[int]]) -> int:
    """How many nodes (the root 0 included) reach ``word`` through head links."""
    seen: Set[int] = set()
    todo = deque([word])
    while todo:
        for head in parents.get(todo.popleft(), ()):
            if head not in seen:
                seen.add(head)
                todo.append(head)
    return len(seen - {word})


def range_head(
    span: Sequence[int], upos: Dict[int, str], parents: Dict[int, Set[int]], lang: str
) -> int:
    """The word of multiword token ``span`` (word indices) whose UPOS the fused word
    takes: the single highest word, else the best-ranked of the highest ones."""
    depth = {w: _ancestors(w, parents) for w in span}
    highest = [w for w in span if depth[w] == min(depth.values())]
    if len(highest) == 1:
        return highest[0]
    ranks = HEAD_PRECEDENCE.get(lang, HEAD_PRECEDENCE["default"])
    missing = [upos[w] for w in highest if upos[w] not in ranks]
    if missing:
        raise ConverterFailure(
            f"words {span[0]}-{span[-1]} tie as the multiword token's head and "
            f"{missing[0]} is not in the converter's ranking for {lang!r}"
        )
    return min(highest, key=lambda w: (ranks.index(upos[w]), w))


def clean_word(form: str) -> str:
    """A word as XTREME's ``udpos`` files hold it: stripped, without ZWNJ and spaces."""
    return form.strip().replace(ZWNJ, "").replace(" ", "")


def unreadable(forms: Sequence[str]) -> bool:
    """A sentence XTREME drops: at least one and at least all but one word read ``_``."""
    empty = sum(f == EMPTY_FORM for f in forms)
    return empty > 0 and empty >= len(forms) - 1


def spans(rows: Sequence[Sequence[str]]) -> List[Tuple[int, int, str]]:
    """(first word, last word, surface form) of each word XTREME makes of a sentence, in
    order: a multiword token's range, else a word alone. ``rows``: the sentence's token
    lines split into their 10 columns, multiword ranges and empty nodes included."""
    forms = {int(r[ID]): r[FORM] for r in rows if r[ID].isdigit()}
    fused = {}  # first word of a range -> (last word, surface form)
    for row in rows:
        if "-" in row[ID]:
            first, last = (int(i) for i in row[ID].split("-"))
            fused[first] = (last, row[FORM])
    out = []
    index = 1
    while index in forms:
        last, surface = fused.get(index, (index, forms[index]))
        out.append((index, last, surface))
        index = last + 1
    return out


def xtreme_words(rows: Sequence[Sequence[str]], lang: str) -> Optional[Words]:
    """The (words, UPOS tags) XTREME's udpos files hold for one CoNLL-U sentence (``rows``
    as :func:`spans` takes them), None for a sentence it drops."""
    words = [r for r in rows if r[ID].isdigit()]
    upos = {int(r[ID]): r[UPOS] for r in words}
    parents = _parents(words)
    forms: List[str] = []
    tags: List[str] = []
    for first, last, surface in spans(rows):
        head = range_head(range(first, last + 1), upos, parents, lang) if last > first else first
        forms.append(surface.strip())
        tags.append(upos[head].strip())
    if unreadable(forms):
        return None
    return tuple(clean_word(f) for f in forms), tuple(tags)
