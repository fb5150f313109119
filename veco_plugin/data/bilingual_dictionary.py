"""ALIGN-MLM's bilingual dictionary as token ids of the pre-training vocabulary.

A MUSE-style word list (``src tgt`` per line, whitespace-separated, a source word may
have several lines; e.g. ``veco-gettext-dictionary``'s ``train.txt``) is resolved through
the joint sentencepiece model and the fairseq ``Dictionary`` into one entry per
usable word pair: the piece ids of each side, padded to ``(N, P)`` with a mask.

How a word is encoded: as it appears after a space inside a sentence, i.e. its pieces
start with ``▁``. sentencepiece cannot cut a piece across a space, so the pieces after
a space depend on the word alone; they are the pieces of ``"a " + word`` after those
of ``"a"``. With a dummy prefix (sentencepiece's default, XLM-R's and
this project's models) that is exactly ``spm.encode(word)``, the form at the start of
a sentence too; a model without one would give the sentence-initial word no ``▁``, a
form the corpus rarely contains. Each piece is looked up in the ``Dictionary`` as
``fairseq-preprocess`` does with the encoded corpus.

A file of token pairs (``--align-dictionary-pieces``; e.g. ``veco-derive-language``'s
``bilingual.txt``: ``▁the`` and its copy, U+E000 + ``▁the``) is read with the same line
format but without sentencepiece: each side is one symbol of the ``Dictionary``, looked up
as it is (:func:`read_token_pairs`, :func:`load_token_pairs`); every entry is the
one-piece case of a word pair. A symbol the ``Dictionary`` lacks, or a special one, is an
error naming the file and line, not a drop.

Entries are dropped, each for the first reason that applies, and counted
(:data:`REASONS`): a word sentencepiece's normalizer erases (no pieces); a piece the
``Dictionary`` lacks (``<unk>``: one row shared by every unknown piece); a multi-piece
word on either side when ``skip_multi_piece`` (otherwise its embedding is the mean of
its pieces' rows, ``E[B_ij]`` of ALIGN-MLM §3's ``L_ALIGN``); the same piece ids on
both sides (the cosine is already 1: no gradient, it would only shrink the loss's mean,
and as a held-out query it would be a free hit: not usable); the same piece ids on both
sides as an earlier entry (each pair counts once in the loss's mean).

:func:`mean_embeddings` is the one embedding computation of the loss and the score:
``(V, C)`` rows -> ``(N, C)`` means of pieces in one fused gather-and-sum
(``embedding_bag``), without host synchronisation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Dict, FrozenSet, Iterator, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F

from ..corpora.text import read_lines, strict, write_lines
from ..errors import VecoUserError

WordPair = Tuple[str, str]
Pieces = Tuple[int, ...]

# Drop reasons, in the order they are checked, with their words in the summary.
REASONS: Dict[str, str] = {
    "no_pieces": "no pieces (normalized away)",
    "unk_piece": "<unk> piece",
    "multi_piece": "multi-piece (skipped)",
    "identical": "identical pieces on both sides",
    "duplicate": "duplicate",
}
FORMAT = "veco-bilingual-dictionary v1"
_SENTINEL = "a "  # any text + a space: the word's pieces are then those after a space


def read_word_pairs(path: str) -> List[Tuple[int, WordPair]]:
    """``(line number, (src, tgt))`` of a MUSE-style file; blank lines are skipped.

    A line with other than two whitespace-separated fields, or bytes that are not
    UTF-8, is a :class:`VecoUserError` naming the file and line; so is a file without
    a single pair.
    """
    fix = "fix or remove that line"
    pairs: List[Tuple[int, WordPair]] = []
    for lineno, line in enumerate(strict(read_lines(path), fix=fix), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 2:
            raise VecoUserError(
                f"{path}:{lineno}: expected 'source_word target_word' (2 whitespace-separated "
                f"fields), found {len(fields)}: {line[:80]!r}; {fix}"
            )
        pairs.append((lineno, (fields[0], fields[1])))
    if not pairs:
        raise VecoUserError(
            f"{path}: no word pairs (the file is empty); expected 'source_word target_word' "
            "lines, e.g. veco-gettext-dictionary's train.txt"
        )
    return pairs


def encode_words(spm: Any, words: Sequence[str]) -> List[List[str]]:
    """The sentencepiece pieces of each word as it appears after a space (module
    docstring); ``spm`` is a loaded ``SentencePieceProcessor``."""
    # sentencepiece never joins text across a space: "a WORD" = pieces of "a" + of WORD
    skip = len(spm.encode(_SENTINEL.strip(), out_type=str))
    return [list(p[skip:]) for p in spm.encode([_SENTINEL + w for w in words], out_type=str)]


def pad_pieces(seqs: Sequence[Sequence[int]], pad: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """``ids: (N, P)`` (int64, ``pad`` after each sequence) and ``mask: (N, P)`` (bool,
    True on pieces); ``P`` is the longest sequence (at least 1)."""
    width = max((len(s) for s in seqs), default=0) or 1
    ids = torch.full((len(seqs), width), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.bool)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(list(s), dtype=torch.long)
        mask[i, : len(s)] = True
    return ids, mask


def mean_embeddings(table: torch.Tensor, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``(N, C)``: row ``n`` is the mean of ``table[ids[n, p]]`` over the ``p`` where
    ``mask[n, p]``; ``table: (V, C)``, ``ids, mask: (N, P)``.

    One ``embedding_bag`` (weights ``mask / pieces``), differentiable in ``table``; no
    host synchronisation. A row without pieces gives zeros.
    """
    weights = mask.to(table.dtype)
    weights = weights / weights.sum(dim=1, keepdim=True).clamp(min=1)
    return F.embedding_bag(ids, table, mode="sum", per_sample_weights=weights)


@dataclass
class ResolvedDictionary:
    """Word pairs as piece ids: entry ``n`` is ``src_words[n]`` -> ``tgt_words[n]``.

    ``src_ids, src_mask: (N, P_src)``, ``tgt_ids, tgt_mask: (N, P_tgt)`` (ids padded
    with ``pad``); ``counts``: ``read`` (non-blank lines), ``usable`` (= N),
    ``mean_of_pieces`` (usable entries with a multi-piece side) and each drop reason of
    :data:`REASONS` that occurred; ``source``: the word list it was read from.
    """

    src_words: List[str]
    tgt_words: List[str]
    src_ids: torch.Tensor
    src_mask: torch.Tensor
    tgt_ids: torch.Tensor
    tgt_mask: torch.Tensor
    pad: int
    counts: Dict[str, int] = field(default_factory=dict)
    source: str = ""

    @classmethod
    def from_pieces(
        cls,
        words: Sequence[WordPair],
        pieces: Sequence[Tuple[Sequence[int], Sequence[int]]],
        pad: int,
        counts: Optional[Dict[str, int]] = None,
        source: str = "",
    ) -> "ResolvedDictionary":
        """From ``(src, tgt)`` words and their ``(src ids, tgt ids)``; ``counts`` default:
        every entry read and usable."""
        src_ids, src_mask = pad_pieces([s for s, _ in pieces], pad)
        tgt_ids, tgt_mask = pad_pieces([t for _, t in pieces], pad)
        if counts is None:
            multi = sum(1 for s, t in pieces if len(s) > 1 or len(t) > 1)
            counts = {"read": len(words), "usable": len(words), "mean_of_pieces": multi}
        return cls(
            [s for s, _ in words],
            [t for _, t in words],
            src_ids,
            src_mask,
            tgt_ids,
            tgt_mask,
            pad,
            dict(counts),
            source,
        )

    def __len__(self) -> int:
        return len(self.src_words)

    def pieces(self) -> Iterator[Tuple[Pieces, Pieces]]:
        """``(src ids, tgt ids)`` of each entry, without padding."""
        for n in range(len(self)):
            yield (
                tuple(self.src_ids[n][self.src_mask[n]].tolist()),
                tuple(self.tgt_ids[n][self.tgt_mask[n]].tolist()),
            )

    def to(self, device: torch.device | str) -> "ResolvedDictionary":
        """A copy with the tensors on ``device``."""
        names = ("src_ids", "src_mask", "tgt_ids", "tgt_mask")
        return replace(
            self, counts=dict(self.counts), **{n: getattr(self, n).to(device) for n in names}
        )

    def summary(self) -> str:
        """``R entries: U usable (S single-piece, M multi-piece: mean of pieces), D dropped:
        n <unk> piece, ...`` (a skipped multi-piece side shows as ``multi-piece
        (skipped)`` among the drops; ``U + D == R``)."""
        c = self.counts
        usable, multi = c.get("usable", len(self)), c.get("mean_of_pieces", 0)
        drops = [(REASONS[r], c[r]) for r in REASONS if c.get(r)]
        line = (
            f"{c.get('read', len(self))} entries: {usable} usable ({usable - multi} "
            f"single-piece, {multi} multi-piece: mean of pieces), "
            f"{sum(n for _, n in drops)} dropped"
        )
        return line + (": " + ", ".join(f"{n} {why}" for why, n in drops) if drops else "")


def resolve_pairs(
    pairs: Sequence[WordPair],
    spm: Any,
    dictionary: Any,
    skip_multi_piece: bool = False,
    source: str = "",
) -> ResolvedDictionary:
    """Word pairs -> :class:`ResolvedDictionary` through sentencepiece ``spm`` and the
    fairseq ``dictionary`` (drop reasons: module docstring)."""
    words = sorted({w for pair in pairs for w in pair})
    ids_of = {
        w: tuple(dictionary.index(p) for p in pieces)
        for w, pieces in zip(words, encode_words(spm, words))
    }
    pieces = [(ids_of[src], ids_of[tgt]) for src, tgt in pairs]
    return _keep_usable(pairs, pieces, dictionary, skip_multi_piece, source)


def _keep_usable(
    words: Sequence[WordPair],
    pieces: Sequence[Tuple[Pieces, Pieces]],
    dictionary: Any,
    skip_multi_piece: bool,
    source: str,
) -> ResolvedDictionary:
    """The entries ``(words[n], pieces[n])`` that no drop reason of :data:`REASONS`
    applies to, counted (module docstring)."""
    unk = dictionary.unk()
    counts: Dict[str, int] = {"read": 0, "usable": 0, "mean_of_pieces": 0}
    seen = set()
    kept_words: List[WordPair] = []
    kept_pieces: List[Tuple[Pieces, Pieces]] = []
    for (src, tgt), (s, t) in zip(words, pieces):
        counts["read"] += 1
        multi = len(s) > 1 or len(t) > 1
        reason: Optional[str] = None
        if not s or not t:
            reason = "no_pieces"
        elif unk in s or unk in t:
            reason = "unk_piece"
        elif multi and skip_multi_piece:
            reason = "multi_piece"
        elif s == t:
            reason = "identical"
        elif (s, t) in seen:
            reason = "duplicate"
        if reason is not None:
            counts[reason] = counts.get(reason, 0) + 1
            continue
        seen.add((s, t))
        counts["usable"] += 1
        counts["mean_of_pieces"] += int(multi)
        kept_words.append((src, tgt))
        kept_pieces.append((s, t))
    return ResolvedDictionary.from_pieces(kept_words, kept_pieces, dictionary.pad(), counts, source)


def load_word_pairs(
    path: str, spm: Any, dictionary: Any, skip_multi_piece: bool = False
) -> ResolvedDictionary:
    """:func:`read_word_pairs` + :func:`resolve_pairs` of one MUSE-style file."""
    pairs = [pair for _, pair in read_word_pairs(path)]
    return resolve_pairs(pairs, spm, dictionary, skip_multi_piece, source=path)


# ------------------------------------------------------------------------------ token pairs


def special_ids(dictionary: Any) -> FrozenSet[int]:
    """The ids of ``dictionary`` that are no token of text: the ``nspecial`` first
    (``<s>``, ``<pad>``, ``</s>``, ``<unk>``) and ``<mask>``."""
    return frozenset(range(dictionary.nspecial)) | {dictionary.index("<mask>")}


def read_token_pairs(path: str, dictionary: Any) -> List[Tuple[int, WordPair, Tuple[int, int]]]:
    """``(line number, (src, tgt), (src id, tgt id))`` of a file of ``token token`` lines
    (:func:`read_word_pairs`' format), each token one symbol of the fairseq
    ``dictionary``, looked up as it is. A token it lacks, or a special symbol
    (:func:`special_ids`), is a :class:`VecoUserError` naming the file and line."""
    special = special_ids(dictionary)
    pairs = []
    for lineno, words in read_word_pairs(path):
        ids = tuple(dictionary.indices.get(w) for w in words)
        for word, i in zip(words, ids):
            if i is None or i in special:
                what = "not a token of" if i is None else "a special symbol of"
                raise VecoUserError(
                    f"{path}:{lineno}: {word!r} is {what} the dictionary ({len(dictionary)} "
                    "symbols): give `token token` lines of this model's dict.txt (e.g. "
                    "veco-derive-language's bilingual.txt), or drop --align-dictionary-pieces "
                    "to read a word list"
                )
        pairs.append((lineno, words, (ids[0], ids[1])))
    return pairs


def load_token_pairs(path: str, dictionary: Any) -> ResolvedDictionary:
    """:func:`read_token_pairs` of one file as a :class:`ResolvedDictionary` of one
    piece per side; an entry with the same token on both sides, or repeating an earlier
    entry, is dropped and counted as for words (module docstring)."""
    pairs = read_token_pairs(path, dictionary)
    words = [w for _, w, _ in pairs]
    pieces = [((s,), (t,)) for _, _, (s, t) in pairs]
    return _keep_usable(words, pieces, dictionary, False, path)


# ------------------------------------------------------------------------ token-level file


def save_resolved(resolved: ResolvedDictionary, path: str) -> None:
    """Write ``resolved`` to ``path`` atomically: three ``#`` header lines (format and
    source; counts as JSON; the summary), then one entry per line as
    ``src<TAB>tgt<TAB>src ids<TAB>tgt ids`` (ids space-separated)."""
    header = {"format": FORMAT, "source": resolved.source, "pad": resolved.pad}
    rows = (
        f"{src}\t{tgt}\t{' '.join(map(str, s))}\t{' '.join(map(str, t))}"
        for src, tgt, (s, t) in zip(resolved.src_words, resolved.tgt_words, resolved.pieces())
    )
    write_lines(
        path,
        [
            "# " + json.dumps(header, ensure_ascii=False),
            "# counts " + json.dumps(resolved.counts),
            "# " + resolved.summary(),
            *rows,
        ],
    )


def _ids(text: str, where: str) -> Pieces:
    try:
        ids = tuple(int(x) for x in text.split())
    except ValueError:
        ids = ()
    if not ids or min(ids) < 0:
        raise VecoUserError(
            f"{where}: {text!r} is not a list of token ids; rewrite the file with the "
            "tool that made it"
        )
    return ids


def load_resolved(path: str, dictionary: Any = None) -> ResolvedDictionary:
    """The :class:`ResolvedDictionary` :func:`save_resolved` wrote to ``path``.

    With ``dictionary``, every id must be one of its symbols and the padding its pad (a
    file made for another vocabulary is an error). A malformed line is a
    :class:`VecoUserError` naming the file and line.
    """
    fix = "rewrite the file with the tool that made it"
    lines = list(enumerate(strict(read_lines(path, keep_raw=True), fix=fix), start=1))
    if len(lines) < 3 or not lines[0][1].startswith("# {"):
        raise VecoUserError(f"{path}: not a resolved bilingual dictionary (no header); {fix}")
    try:
        header = json.loads(lines[0][1][2:])
        counts = json.loads(lines[1][1][len("# counts ") :])
    except json.JSONDecodeError as exc:
        raise VecoUserError(f"{path}: unreadable header ({exc}); {fix}") from exc
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise VecoUserError(f"{path}:1: not a {FORMAT} file; {fix}")
    words: List[WordPair] = []
    pieces: List[Tuple[Pieces, Pieces]] = []
    for lineno, line in lines[3:]:
        where = f"{path}:{lineno}"
        fields = line.split("\t")
        if len(fields) != 4:
            raise VecoUserError(f"{where}: expected 4 tab-separated fields, found {len(fields)}")
        words.append((fields[0], fields[1]))
        pieces.append((_ids(fields[2], where), _ids(fields[3], where)))
    pad = int(header["pad"])
    if dictionary is not None:
        size = len(dictionary)
        top = max((max(s + t) for s, t in pieces), default=-1)
        if top >= size or pad != dictionary.pad():
            raise VecoUserError(
                f"{path}: made for another vocabulary (token id {top}, pad {pad}; the "
                f"dictionary has {size} symbols, pad {dictionary.pad()}); resolve the word "
                "list again with this model's spm.model and dict.txt"
            )
    return ResolvedDictionary.from_pieces(words, pieces, pad, counts, header.get("source", ""))
