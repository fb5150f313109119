"""Derived languages of ALIGN-MLM's controlled transfer experiment (Tang et al., App. F-H;
after Deshpande et al. 2021): English and a language made from it by a transformation,
so that the two differ in nothing else (``veco-derive-language``).

**T_trans** (transliteration, App. F): "a copy of the vocabulary for all the tokens other
than the special tokens". The derived language is written at the *piece* level: an English
sentence is cut into sentencepiece pieces and each piece ``p`` becomes its copy
``MARKER + p`` (:func:`copy_piece`), ``MARKER`` = U+E000, the first character of Unicode's
Private Use Area. That character is never assigned, so no English text holds it (an input
or a sentencepiece model that does is refused); NFKC leaves it alone; it is not whitespace,
so fairseq's line splitting and ``dict.txt`` parsing keep it inside the token; and the copy
is undone by dropping it (:func:`original_piece`). On the non-special vocabulary V,
``p -> MARKER + p`` is a bijection onto a set disjoint from V; a fairseq dictionary of both
languages is the English rows followed by their copies, same counts
(:func:`joint_dictionary`). Specials (fairseq's ``<s> <pad> </s> <unk> <mask>``,
``madeupwordNNNN``, ``#fairseq:overwrite`` rows, sentencepiece's control and unknown
pieces) are shared, not copied.

**T_inv** (inversion, App. F, G.1-G.2): "we invert the order of tokens in a sentence. We
use the period token to decide sentence boundaries". Applied to the *words* of a line
before segmentation (App. G.2: word level, not token level). The rule
(:func:`inversion_order`): a word that is exactly ``.``, ``!`` or ``?`` (the sentence ends
of the authors' release, princeton-nlp/align-mlm ``invert_pretrain_data.py``) ends a
sentence; within each sentence the words before its end are reversed and the end stays
last; words after the last end (a sentence without one) are reversed whole. End positions
are fixed points and each stretch is reversed, so T_inv is an involution. Each line keeps
its line (the release writes each sentence on a line of its own): English and derived
files stay line-aligned, XLM's TLM pairs for free. Tags move with their words (App. G.1).

On *tagged* sentences T_inv is the authors' POS rule (``invert_pos_data.py``,
:func:`pos_inversion_order`): the last word stays last when it is ``.``, ``!`` or ``?``,
every other word is reversed, sentence ends inside included. On text the words come
out as the authors' ``invert_pretrain_data.py`` orders them (each sentence inverted,
its end last); what differs is the layout: they write each sentence on a line of its
own, here a line stays a line.

**T_syn** (syntax, App. F: English with French's order of the dependents of nouns and
verbs, Wang & Eisner 2016): :mod:`.syntax`. It needs dependency trees: its text and
tagged inputs are CoNLL-U (``--text X.conllu``: each tree's words a line), its ordering
model is trained on the French treebanks of ``--syn-treebank``.

**T_trans∘T_inv**, **T_trans∘T_syn**: the words re-ordered, then segmentation, then the
copies.

**Segmentation.** Every whitespace-separated word is cut by sentencepiece *alone*, as the
tagging pipeline cuts words (:mod:`..data.tag_windows`); with sentencepiece's default
``split_by_whitespace`` that is the segmentation of the whole line. Text is written as
space-separated pieces on both sides (one segmentation shared by both). In a tagged file
a derived word is its copy pieces joined without a separator (``\\ue000▁run\\ue000ning``);
:func:`segment_words` (the tagging pipeline's word encoder) cuts such a word at the marker
into exactly those copies, and an English word through sentencepiece as before.

**Bilingual dictionary** (App. G.1; Table 4: 25 % of the tokens): T_trans's one-to-one
map restricted to ``round(coverage * |V|)`` types (Python's ``round``, half to even),
drawn uniformly without replacement over the non-special vocabulary types, not weighted
by frequency (the paper does not say which; uniform keeps the draw independent of the
corpus), by ``random.Random(seed).sample`` over the types in dictionary order, and
written in that order as MUSE-style ``src tgt`` lines (English piece, its copy).
"""

import json
import os
import random
import re
from dataclasses import dataclass
from typing import AbstractSet, Any, Dict, FrozenSet, Iterator, List, Optional, Sequence, Tuple

from ..data.dictionary import load_dictionary
from ..errors import VecoUserError
from ..outputs import WHOLE, check_named, check_output_dir, staged_dir
from .subwords import load_sentencepiece
from .syntax import Tree, french_model, read_trees, syntax_order
from .syntax_order import OrderModel
from .tagging import TaggedSentence, format_tagged_tsv, is_conllu, read_tagged
from .text import chunks, input_file, read_lines, read_lines_strict, strict

MARKER = "\ue000"  # U+E000, Private Use Area: the derived script's mark on each piece
SENTENCE_ENDS: FrozenSet[str] = frozenset({".", "!", "?"})
FAIRSEQ_SPECIALS: FrozenSet[str] = frozenset({"<s>", "<pad>", "</s>", "<unk>", "<mask>"})
OVERWRITE = "#fairseq:overwrite"
_MADEUP = re.compile(r"madeupword\d+")

TRANS, INV, TRANS_INV, SYN, TRANS_SYN = "trans", "inv", "trans_inv", "syn", "trans_syn"
# transformation -> (how the words are re-ordered: "", INV or SYN; copy the pieces)
TRANSFORMS: Dict[str, Tuple[str, bool]] = {
    TRANS: ("", True),
    INV: (INV, False),
    TRANS_INV: (INV, True),
    SYN: (SYN, False),
    TRANS_SYN: (SYN, True),
}
DEFAULT_TRANSFORMS = (TRANS, INV, TRANS_INV)
SYN_MODEL_FILE = "syn-model.json"

Pieces = List[str]


# ------------------------------------------------------------------------------ T_inv


def inversion_order(words: Sequence[str]) -> List[int]:
    """T_inv as a permutation: the derived sentence is ``[words[i] for i in order]``.

    ``words``: (W,); returns ``order``: (W,). Sentence ends (:data:`SENTENCE_ENDS`) stay
    where they are, the words before each are reversed, trailing words after the last
    end are reversed whole. ``order`` is its own inverse."""
    order: List[int] = []
    start = 0
    for i, word in enumerate(words):
        if word in SENTENCE_ENDS:
            order.extend(range(i - 1, start - 1, -1))
            order.append(i)
            start = i + 1
    order.extend(range(len(words) - 1, start - 1, -1))
    return order


def pos_inversion_order(words: Sequence[str]) -> List[int]:
    """T_inv on a tagged sentence as the authors' ``invert_pos_data.py``: the last word
    stays last when it is a sentence end (:data:`SENTENCE_ENDS`), every other word is
    reversed (sentence ends inside included). ``words``: (W,) -> ``order``: (W,), its own
    inverse."""
    keep = 1 if words and words[-1] in SENTENCE_ENDS else 0
    return list(range(len(words) - 1 - keep, -1, -1)) + list(range(len(words) - keep, len(words)))


def invert_words(words: Sequence[str]) -> List[str]:
    """T_inv on the words of a line (:func:`inversion_order`)."""
    return [words[i] for i in inversion_order(words)]


def invert_tagged(sentence: TaggedSentence) -> TaggedSentence:
    """T_inv on a tagged sentence (:func:`pos_inversion_order`): each tag moves with its word."""
    order = pos_inversion_order(sentence.words)
    return TaggedSentence(
        tuple(sentence.words[i] for i in order),
        tuple(sentence.tags[i] for i in order),
        sentence.where,
    )


# ---------------------------------------------------------------------------- T_trans


def copy_piece(piece: str, specials: AbstractSet[str] = FAIRSEQ_SPECIALS) -> str:
    """T_trans on one piece: its copy ``MARKER + piece``; a special stays itself."""
    return piece if piece in specials else MARKER + piece


def is_copy(piece: str) -> bool:
    return piece.startswith(MARKER)


def original_piece(piece: str) -> str:
    """T_trans⁻¹ on one piece: the English piece of a copy; a special stays itself."""
    return piece[len(MARKER) :] if is_copy(piece) else piece


def transliterate(pieces: Sequence[str], specials: AbstractSet[str] = FAIRSEQ_SPECIALS) -> Pieces:
    """T_trans on a sequence of pieces (P,) -> (P,), position by position."""
    return [copy_piece(p, specials) for p in pieces]


def untransliterate(pieces: Sequence[str]) -> Pieces:
    """T_trans⁻¹: (P,) derived pieces -> (P,) English pieces."""
    return [original_piece(p) for p in pieces]


def derived_word(pieces: Sequence[str]) -> str:
    """A derived word as a tagged file writes it, from its English ``pieces``: each piece
    after a marker, no other separator (its copies joined; a special, which keeps no
    marker in text, is read back as itself by :func:`derived_word_pieces`). A word
    sentencepiece makes no pieces of is the marker alone (no pieces: ``<unk>`` to the
    tagger, as its English word)."""
    return "".join(MARKER + p for p in pieces) or MARKER


def derived_word_pieces(word: str, specials: AbstractSet[str] = FAIRSEQ_SPECIALS) -> Pieces:
    """The pieces of a :func:`derived_word`: :func:`transliterate` of its English pieces."""
    return [copy_piece(p, specials) for p in word.split(MARKER)[1:] if p]


def segment_words(sp: Any, words: List[str]) -> List[Pieces]:
    """The pieces of each word, each word alone: a derived word (it starts with
    :data:`MARKER`) is cut at the marker into its copies, any other word by sentencepiece
    processor ``sp``. The tagging pipeline's word encoder (``tagging_data``)."""
    english = [w for w in words if not is_copy(w)]
    encoded = iter(sp.encode(english, out_type=str) if english else [])
    return [derived_word_pieces(w) if is_copy(w) else next(encoded) for w in words]


# --------------------------------------------------------------------- one sentence


def word_order(
    transform: str, words: Sequence[str], syn: Optional[Sequence[int]] = None, tagged=False
) -> Sequence[int]:
    """The derived sentence's words as indices into ``words``: T_inv's (on a ``tagged``
    sentence its POS rule), ``syn`` (T_syn's order of the sentence, :func:`.syntax.syntax_order`)
    or the English order."""
    kind = TRANSFORMS[transform][0]
    if kind == SYN:
        if syn is None:
            raise ValueError(f"{transform}: T_syn's order of the sentence is needed")
        return syn
    if kind == INV:
        return pos_inversion_order(words) if tagged else inversion_order(words)
    return range(len(words))


def derive_line(
    words: Sequence[str],
    word_pieces: Sequence[Sequence[str]],
    transform: str,
    syn: Optional[Sequence[int]] = None,
) -> Tuple[Pieces, Pieces]:
    """An English line of ``words`` (W,), ``word_pieces[w]`` the pieces of word ``w``,
    -> (English pieces (P,), derived pieces (P,)) under ``transform`` (:data:`TRANSFORMS`;
    ``syn``: T_syn's order, :func:`word_order`)."""
    copy = TRANSFORMS[transform][1]
    english = [p for pieces in word_pieces for p in pieces]
    derived = [p for i in word_order(transform, words, syn) for p in word_pieces[i]]
    return english, transliterate(derived) if copy else derived


def derive_tagged(
    sentence: TaggedSentence,
    word_pieces: Sequence[Sequence[str]],
    transform: str,
    syn: Optional[Sequence[int]] = None,
) -> TaggedSentence:
    """A tagged English sentence -> the derived sentence, each tag with its word; under
    T_trans a word is written as :func:`derived_word` of its pieces ``word_pieces[w]``."""
    copy = TRANSFORMS[transform][1]
    order = word_order(transform, sentence.words, syn, tagged=True)
    words = [derived_word(word_pieces[i]) if copy else sentence.words[i] for i in order]
    return TaggedSentence(tuple(words), tuple(sentence.tags[i] for i in order), sentence.where)


def check_words(words: Sequence[str], where: str) -> None:
    """Refuse a sentence without words, or a word holding the derived script's marker."""
    if not words:
        raise VecoUserError(
            f"{where}: a sentence without words (an empty line): give one sentence a line, "
            "remove the empty lines"
        )
    for number, word in enumerate(words, 1):
        if MARKER in word:
            raise VecoUserError(
                f"{where}: word {number} ({word!r}) holds U+E000, the marker of the derived "
                "script: give English text (remove that character), not derived text"
            )


# ----------------------------------------------------------------------- dictionaries


@dataclass(frozen=True)
class DictRow:
    """A ``dict.txt`` line: ``token count`` (``flag``: fairseq's ``#fairseq:overwrite``)."""

    token: str
    count: str
    flag: Optional[str] = None

    def line(self) -> str:
        return f"{self.token} {self.count}" + (f" {self.flag}" if self.flag else "")


def is_special_row(row: DictRow, specials: AbstractSet[str] = FAIRSEQ_SPECIALS) -> bool:
    return row.token in specials or row.flag == OVERWRITE or bool(_MADEUP.fullmatch(row.token))


def spm_specials(sp: Any) -> FrozenSet[str]:
    """The special pieces of sentencepiece processor ``sp`` (unknown and control) and
    fairseq's (:data:`FAIRSEQ_SPECIALS`)."""
    own = {
        sp.id_to_piece(i)
        for i in range(sp.get_piece_size())
        if sp.is_unknown(i) or sp.is_control(i)
    }
    return FAIRSEQ_SPECIALS | own


def spm_vocabulary(sp: Any, model: str) -> List[str]:
    """The non-special pieces of ``sp`` in id order (the rows ``subwords.write_dictionary``
    writes); a piece holding the marker is refused (``model``: its path, for the message)."""
    pieces = [
        sp.id_to_piece(i)
        for i in range(sp.get_piece_size())
        if not (sp.is_unknown(i) or sp.is_control(i))
    ]
    held = [p for p in pieces if MARKER in p]
    if held:
        raise VecoUserError(
            f"--spm-model {model}: piece {held[0]!r} holds U+E000, the marker of the derived "
            "script: train the sentencepiece model on English text"
        )
    return pieces


def parse_dictionary(
    lines: Sequence[str], path: str, vocabulary: AbstractSet[str], specials: AbstractSet[str]
) -> List[DictRow]:
    """The rows of an English ``dict.txt`` (``lines``, as fairseq's ``Dictionary`` reads
    them); every non-special token must be a piece of ``vocabulary`` (the sentencepiece
    model's): a row naming another is a :class:`VecoUserError` naming ``path`` and line."""
    rows = []
    for lineno, line in enumerate(lines, 1):
        fields = line.split()
        flag = fields.pop() if fields[-1:] == [OVERWRITE] else None
        if len(fields) != 2:
            raise VecoUserError(
                f"{path}:{lineno}: {line!r} is not '<token> <count>': give a fairseq dict.txt"
            )
        row = DictRow(fields[0], fields[1], flag)
        if not is_special_row(row, specials) and row.token not in vocabulary:
            what = (
                "a derived token (this is already a joint dictionary)"
                if is_copy(row.token)
                else "not a piece of --spm-model"
            )
            raise VecoUserError(
                f"{path}:{lineno}: token {row.token!r} is {what}: give the English dict.txt "
                "of this sentencepiece model (e.g. veco-spm's)"
            )
        rows.append(row)
    return rows


def joint_dictionary(
    rows: Sequence[DictRow], specials: AbstractSet[str] = FAIRSEQ_SPECIALS
) -> List[DictRow]:
    """English ``dict.txt`` rows (N,) -> the dictionary of English and its T_trans copy:
    the N English rows as they are, then the copy of each non-special row, same count."""
    copies = [DictRow(MARKER + r.token, r.count) for r in rows]
    return list(rows) + [c for r, c in zip(rows, copies) if not is_special_row(r, specials)]


def dictionary_types(rows: Sequence[DictRow], specials: AbstractSet[str]) -> List[str]:
    """The non-special tokens of ``rows``, in dictionary order: the types drawn from."""
    return [r.token for r in rows if not is_special_row(r, specials)]


def bilingual_dictionary(
    types: Sequence[str], coverage: float = 0.25, seed: int = 1
) -> List[Tuple[str, str]]:
    """T_trans restricted to ``round(coverage * len(types))`` of ``types`` (the non-special
    vocabulary), drawn uniformly without replacement with ``seed``: ``(piece, copy)``
    pairs in the order of ``types``."""
    if not 0 < coverage <= 1:
        raise VecoUserError(f"--dictionary-coverage {coverage}: give a fraction in (0, 1]")
    size = round(coverage * len(types))
    if size == 0:
        raise VecoUserError(
            f"--dictionary-coverage {coverage} of {len(types)} tokens is no entry: give a "
            "larger coverage (or a larger vocabulary)"
        )
    chosen = sorted(random.Random(seed).sample(range(len(types)), size))
    return [(types[i], MARKER + types[i]) for i in chosen]


def format_pairs(pairs: Sequence[Tuple[str, str]]) -> str:
    """MUSE-style ``src tgt`` lines."""
    return "".join(f"{src} {tgt}\n" for src, tgt in pairs)


# ----------------------------------------------------------------------------- files

DICT_FILE, PAIRS_FILE, ENGLISH = "dict.txt", "bilingual.txt", "en"
_CHUNK = 10000  # text lines encoded per call


@dataclass(frozen=True)
class DeriveConfig:
    """What ``veco-derive-language`` does: the flags, checked (:meth:`from_flags`)."""

    spm_model: str
    dictionary: Optional[str]
    output: str
    texts: Tuple[str, ...]
    tagged: Tuple[str, ...]
    transforms: Tuple[str, ...]
    coverage: float = 0.25
    seed: int = 1
    syn_treebanks: Tuple[str, ...] = ()
    """the target's CoNLL-U treebanks T_syn's ordering model is trained on."""

    @classmethod
    def from_flags(
        cls,
        spm_model: str,
        dictionary: Optional[str],
        output: str,
        texts: Sequence[str],
        tagged: Sequence[str],
        transforms: str,
        coverage: float = 0.25,
        seed: int = 1,
        syn_treebanks: Sequence[str] = (),
    ) -> "DeriveConfig":
        """Refuse unknown transformations, a coverage outside (0, 1], missing inputs, T_syn
        without trees or treebanks and an output directory that is not new or empty,
        before any work."""
        named = [t.strip() for t in transforms.split(",")]
        for name in named:
            if name not in TRANSFORMS:
                raise VecoUserError(
                    f"--transforms {transforms}: unknown transformation {name!r}: give "
                    f"comma-separated names of {', '.join(TRANSFORMS)}"
                )
        if len(set(named)) != len(named):
            raise VecoUserError(f"--transforms {transforms}: a transformation named twice")
        if not 0 < coverage <= 1:
            raise VecoUserError(f"--dictionary-coverage {coverage}: give a fraction in (0, 1]")
        check_named({"--spm-model": spm_model, "--dict": dictionary, "--output": output})
        for flag, paths in (("--text", texts), ("--tagged", tagged)):
            for path in paths:
                input_file(path, flag)
        if dictionary is not None:
            input_file(dictionary, "--dict")
        if any(TRANSFORMS[t][0] == SYN for t in named):
            check_syn_inputs(texts, tagged, syn_treebanks)
        if not texts and not tagged and not any(TRANSFORMS[t][1] for t in named):
            raise VecoUserError(
                "nothing to write: give --text or --tagged files (or a transformation with "
                "trans, for the dictionaries alone)"
            )
        cfg = cls(
            spm_model, dictionary, output, tuple(texts), tuple(tagged), tuple(named), coverage,
            seed, tuple(syn_treebanks),
        )  # fmt: skip
        cfg.output_names()
        check_output_dir(output, "--output", overwrite=False, refill=WHOLE)
        return cfg

    @property
    def copies(self) -> bool:
        return any(TRANSFORMS[t][1] for t in self.transforms)

    @property
    def syn(self) -> bool:
        return any(TRANSFORMS[t][0] == SYN for t in self.transforms)

    def output_names(self) -> List[Tuple[bool, str, str]]:
        """``(tagged, input file, output name)`` of each input; the name under ``OUT/en`` and
        ``OUT/<transform>``: a text file keeps its name (a CoNLL-U one becomes ``STEM.txt``),
        a tagged one becomes ``STEM.tsv``; two inputs that would write one file are refused."""
        names: List[Tuple[bool, str, str]] = []
        taken: Dict[str, str] = {}
        inputs = [("--text", p) for p in self.texts] + [("--tagged", p) for p in self.tagged]
        for flag, path in inputs:
            name = os.path.basename(path).removesuffix(".gz")
            if flag == "--tagged" or is_conllu(path):
                name = os.path.splitext(name)[0] + (".tsv" if flag == "--tagged" else ".txt")
            if name in taken:
                raise VecoUserError(
                    f"{taken[name]} and {flag} {path} would both write {ENGLISH}/{name}: give "
                    "inputs of different names"
                )
            taken[name] = f"{flag} {path}"
            names.append((flag == "--tagged", path, name))
        return names


def check_syn_inputs(texts: Sequence[str], tagged: Sequence[str], treebanks: Sequence[str]) -> None:
    """T_syn re-orders dependency trees: every input is CoNLL-U, and the ordering model
    has a treebank to learn from."""
    if not treebanks:
        raise VecoUserError(
            "--transforms with syn: give --syn-treebank FILE.conllu (the target language's "
            "treebanks, e.g. UD_French-GSD's fr_gsd-ud-*.conllu) to train its ordering model"
        )
    for flag, paths in (("--text", texts), ("--tagged", tagged), ("--syn-treebank", treebanks)):
        for path in paths:
            input_file(path, flag)
            if not is_conllu(path):
                raise VecoUserError(
                    f"{flag} {path}: T_syn re-orders dependency trees: give CoNLL-U files "
                    "(*.conllu) for every input of a run with syn"
                )


def _english_rows(cfg: DeriveConfig, vocabulary: Sequence[str], specials: AbstractSet[str]):
    if cfg.dictionary is None:
        return [DictRow(p, "1") for p in vocabulary]
    load_dictionary(cfg.dictionary)  # fairseq's reading: a malformed line is FILE:LINE
    lines = read_lines_strict(cfg.dictionary, keep_raw=True)
    return parse_dictionary(lines, cfg.dictionary, set(vocabulary), specials)


def _encode_text_lines(sp: Any, path: str, first: int, words: Sequence[Sequence[str]]):
    """(words, pieces of each word) of each line's ``words``; lines numbered from ``first``."""
    for lineno, w in enumerate(words, first):
        check_words(w, f"{path}:{lineno}")
    flat = [x for w in words for x in w]
    encoded = sp.encode(flat, out_type=str)
    out, at = [], 0
    for lineno, w in enumerate(words, first):
        pieces = encoded[at : at + len(w)]
        at += len(w)
        if not any(pieces):
            raise VecoUserError(
                f"{path}:{lineno}: a sentence without words (sentencepiece makes no pieces of "
                f"{' '.join(w)[:60]!r}): remove that line"
            )
        out.append((w, pieces))
    return out


def _text_lines(path: str) -> Iterator[Tuple[List[str], Optional[Tree]]]:
    """(words, tree) of each line of a text file (no tree), or of each tree of a CoNLL-U
    file (its words)."""
    if is_conllu(path):
        yield from ((list(t.words), t) for t in read_trees(path))
    else:
        yield from ((line.split(), None) for line in strict(read_lines(path)))


def _derive_text(
    cfg: DeriveConfig, sp: Any, path: str, outputs: Dict[str, str], model: Optional[OrderModel]
):
    files = {key: open(out, "w", encoding="utf-8", newline="\n") for key, out in outputs.items()}
    lines = words = pieces = 0
    try:
        for chunk in chunks(_text_lines(path), _CHUNK):
            encoded = _encode_text_lines(sp, path, lines + 1, [w for w, _ in chunk])
            for (w, p), (_, tree) in zip(encoded, chunk):
                syn = syntax_order(tree, model, cfg.seed) if model and tree else None
                for transform in cfg.transforms:
                    english, derived = derive_line(w, p, transform, syn)
                    files[transform].write(" ".join(derived) + "\n")
                files[ENGLISH].write(" ".join(english) + "\n")
                words, pieces = words + len(w), pieces + len(english)
            lines += len(chunk)
    finally:
        for f in files.values():
            f.close()
    if lines == 0:
        raise VecoUserError(f"--text {path}: no lines (an empty file)")
    return {"lines": lines, "words": words, "pieces": pieces}


def _derive_tagged(
    cfg: DeriveConfig, sp: Any, path: str, outputs: Dict[str, str], model: Optional[OrderModel]
):
    sentences = read_tagged([path])
    trees = read_trees(path) if model else []
    for s in sentences:
        check_words(s.words, s.where)
    flat = sp.encode([w for s in sentences for w in s.words], out_type=str)
    texts = {ENGLISH: format_tagged_tsv(sentences)}
    at = 0
    derived: Dict[str, List[TaggedSentence]] = {t: [] for t in cfg.transforms}
    for k, s in enumerate(sentences):
        pieces = flat[at : at + len(s.words)]
        at += len(s.words)
        syn = syntax_order(trees[k], model, cfg.seed) if model else None
        for transform in cfg.transforms:
            derived[transform].append(derive_tagged(s, pieces, transform, syn))
    texts.update({t: format_tagged_tsv(d) for t, d in derived.items()})
    for key, text in texts.items():
        with open(outputs[key], "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    return {"sentences": len(sentences), "words": sum(len(s.words) for s in sentences)}


def derive_language(cfg: DeriveConfig) -> Dict[str, Any]:
    """Write every output of ``cfg`` (``veco-derive-language``'s layout) into a new
    ``cfg.output``, atomically; returns what was written, counted."""
    sp = load_sentencepiece(cfg.spm_model)
    vocabulary = spm_vocabulary(sp, cfg.spm_model)
    specials = spm_specials(sp)
    report: Dict[str, Any] = {"transforms": list(cfg.transforms), "text": {}, "tagged": {}}
    names = cfg.output_names()
    model = None
    if cfg.syn:
        model, report["syn_model"] = french_model(cfg.syn_treebanks)
        report["syn_model"]["treebanks"] = list(cfg.syn_treebanks)
    with staged_dir(cfg.output) as stage:
        if model is not None:
            with open(os.path.join(stage, SYN_MODEL_FILE), "w", encoding="utf-8") as f:
                json.dump(model.to_json(), f, indent=0, sort_keys=True)
        if cfg.copies:
            rows = _english_rows(cfg, vocabulary, specials)
            pairs = bilingual_dictionary(dictionary_types(rows, specials), cfg.coverage, cfg.seed)
            joint = joint_dictionary(rows, specials)
            with open(os.path.join(stage, DICT_FILE), "w", encoding="utf-8") as f:
                f.write("".join(r.line() + "\n" for r in joint))
            with open(os.path.join(stage, PAIRS_FILE), "w", encoding="utf-8") as f:
                f.write(format_pairs(pairs))
            types = len(dictionary_types(rows, specials))
            report["dictionary"] = {
                "joint_rows": len(joint),
                "types": types,
                "entries": len(pairs),
                "coverage": cfg.coverage,
                "seed": cfg.seed,
                "draw": "uniform over types",
            }
        for key in (ENGLISH,) + cfg.transforms if names else ():
            os.makedirs(os.path.join(stage, key))
        for tagged, path, name in names:
            outputs = {key: os.path.join(stage, key, name) for key in (ENGLISH,) + cfg.transforms}
            if tagged:
                report["tagged"][name] = _derive_tagged(cfg, sp, path, outputs, model)
            else:
                report["text"][name] = _derive_text(cfg, sp, path, outputs, model)
    return report
