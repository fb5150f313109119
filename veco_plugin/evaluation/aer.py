"""Alignment error rate (AER), precision, recall and F1 of word alignments.

Scores (Och & Ney, "A Systematic Comparison of Various Statistical Alignment
Models", Computational Linguistics 29(1), 2003). Gold alignments have sure links
``S`` and possible links ``P`` with ``S ⊆ P`` (a sure link is also possible); ``A`` is
the predicted alignment::

    precision = |A ∩ P| / |A|
    recall    = |A ∩ S| / |S|
    AER       = 1 - (|A ∩ S| + |A ∩ P|) / (|A| + |S|)
    F1        = 2 * precision * recall / (precision + recall)

Every count is summed over the whole corpus before dividing (micro average), never
averaged per sentence. A link is a set element: a link listed twice counts once.
Scores are exact fractions; :func:`percent` rounds them half up to two decimals.

Degenerate cases: a ratio whose denominator is 0 is taken as 0, so nothing is divided by
zero. An empty prediction (``|A| = 0``) has precision 0, recall 0, F1 0 and AER 1 (the
formula gives 1 whenever ``|S| > 0``; with ``|A| + |S| = 0`` the ratio is taken as 0, so
AER is 1 as well: no credit without links). A gold standard without sure links
(``|S| = 0``) has recall 0, hence F1 0.

Formats. A link ``(i, j)`` pairs source word ``i`` with target word ``j``, 0-based, in
memory.

``pharaoh`` (gold or prediction)
    one line per sentence pair, in corpus order; whitespace-separated links ``i-j``,
    0-based; an empty line is a pair without links. Gold files may also write a
    possible-only link as ``ipj``; predictions may not (a prediction is a plain set of
    links). Predictions may be 1-based (``one_based=True``).
``naacl`` (gold only; WPT / HLT-NAACL 2003 shared task, Mihalcea & Pedersen 2003)
    one link per line, ``sentence_no position_L1 position_L2 [S|P] [confidence]``; word
    positions are 1-based; a missing ``S|P`` field means ``S``. The optional confidence,
    a number in (0, 1], belongs to the standard format and is ignored here (every listed
    link counts fully). A ``sentence_no`` is a label that orders the sentence pairs, not
    a position: the k-th smallest distinct ``sentence_no`` is sentence pair k (line k of
    ``--src``/``--tgt`` and of the prediction), as the XLM-Align authors' loader reads
    its test sets (CZWin32768/XLM-Align, ``word_aligner/alignment-test-sets.tar.gz``):
    their labels start at 0 (de-en, en-cs) or 1 (en-fr, ro-en; written ``0001``) or 26
    (en-hi), and skip numbers (ro-en has 199 pairs labelled 1..203). So every sentence
    pair has at least one gold link, and the corpus has as many pairs as distinct labels.
    In every published file the labels ascend, so this is also the order in which they
    first appear. CRLF line ends are read like LF.

Links outside their sentence. Three published gold files hold a link outside its
sentence (de-en ``178 22 -99``, en-cs ``430 60 44``, en-hi ``68 33 34``), and WPT files
mark a NULL link with position 0. Such gold links are not word pairs: they are left out
of ``S`` and ``P``, and :func:`evaluate_files` logs one warning line saying how many.
Alignment files carry no sentence lengths: without them only positions before the first
word are detected. With ``lengths`` (from whitespace-tokenized, line-aligned
``--src``/``--tgt`` files, split like ``str.split``, as ``veco-align`` splits them)
gold links past the end of their sentence are left out too, and a predicted link outside
its sentence is an error (a prediction comes from the user's aligner).

Every problem in the user's files is a :class:`~veco_plugin.errors.VecoUserError` whose
one-line message names the file, the line and the fix.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import AbstractSet, FrozenSet, List, Optional, Sequence, Set, Tuple

from ..errors import VecoUserError

logger = logging.getLogger("veco_plugin.evaluation.aer")

Link = Tuple[int, int]  # (source word, target word), 0-based
Lengths = Sequence[Tuple[int, int]]  # (source words, target words) per sentence pair

GOLD_FORMATS = ("pharaoh", "naacl")

# "i-j" or "ipj"; the optional minus signs only let negative indices get their own message
_PHARAOH_LINK = re.compile(r"^(-?[0-9]+)([-p])(-?[0-9]+)$")
_NAACL_FIELDS = "sentence_no position_L1 position_L2 [S|P] [confidence]"


@dataclass(frozen=True)
class GoldSentence:
    """Gold links of one sentence pair; ``possible`` contains ``sure`` (S ⊆ P)."""

    sure: FrozenSet[Link]
    possible: FrozenSet[Link]


@dataclass(frozen=True)
class Gold:
    """A gold standard as read: its sentence pairs in corpus order, and the gold links
    left out because they lie outside their sentence, each as ``(file line, why)``."""

    sentences: List[GoldSentence]
    left_out: List[Tuple[int, str]]


@dataclass(frozen=True)
class AerCounts:
    """Corpus totals: ``sure`` = |S|, ``possible`` = |P| (sure links included),
    ``predicted`` = |A|, ``matched_sure`` = |A ∩ S|, ``matched_possible`` = |A ∩ P|."""

    sentences: int = 0
    sure: int = 0
    possible: int = 0
    predicted: int = 0
    matched_sure: int = 0
    matched_possible: int = 0


@dataclass(frozen=True)
class AerScores:
    """Exact scores in [0, 1] (``float(scores.aer)`` for a float)."""

    precision: Fraction
    recall: Fraction
    f1: Fraction
    aer: Fraction


def _error(name: str, lineno: int, message: str) -> VecoUserError:
    return VecoUserError(f"{name}:{lineno}: {message}")


def read_lines(path: str, flag: str = "") -> List[str]:
    """The lines of a UTF-8 text file without their line ends (``\\n``, ``\\r\\n``);
    ``flag`` (``--src``) names the file in the messages. Read in text mode, so that pipes
    (``/dev/stdin``, ``<(zcat gold.gz)``) and lone ``\\r`` line ends work (``corpora.text``
    reads regular files, gzipped or not, in binary)."""
    name = f"{flag} {path}" if flag else path
    try:
        # utf-8-sig: a byte-order mark would otherwise glue itself to the first token
        with open(path, encoding="utf-8-sig") as f:
            return [line.rstrip("\n") for line in f]
    except FileNotFoundError:
        raise VecoUserError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise VecoUserError(f"{name} is a directory; give a file") from None
    except UnicodeDecodeError as exc:
        raise VecoUserError(
            f"{name}: not UTF-8 text (byte {exc.start}); convert it with iconv -t utf-8"
        ) from None
    except OSError as exc:
        raise VecoUserError(f"{name}: cannot read ({exc.strerror})") from None


def read_parallel(src_path: str, tgt_path: str) -> Tuple[List[str], List[str]]:
    """The lines of line-aligned ``--src`` and ``--tgt`` files: as many in each, and at
    least one."""
    src_lines, tgt_lines = read_lines(src_path, "--src"), read_lines(tgt_path, "--tgt")
    sentence_lengths(src_lines, tgt_lines, src_path, tgt_path)  # same line counts
    if not src_lines:
        raise VecoUserError(
            f"--src {src_path} and --tgt {tgt_path} are empty: give line-aligned files, one "
            "sentence per line"
        )
    return src_lines, tgt_lines


def sentence_lengths(
    src_lines: Sequence[str], tgt_lines: Sequence[str], src_name: str, tgt_name: str
) -> List[Tuple[int, int]]:
    """(source words, target words) of each line pair; words are whitespace-separated."""
    if len(src_lines) != len(tgt_lines):
        raise VecoUserError(
            f"--src {src_name} has {len(src_lines)} lines but --tgt {tgt_name} has "
            f"{len(tgt_lines)}; give line-aligned files, one sentence per line"
        )
    return [(len(s.split()), len(t.split())) for s, t in zip(src_lines, tgt_lines)]


def _outside(link: Link, sentence: int, lengths: Optional[Lengths], first: int) -> str:
    """Why ``link`` (0-based) lies outside sentence pair ``sentence`` (0-based), or ``""``.

    ``first`` is the file's first word index (0 or 1), for the message.
    """
    if min(link) < 0:
        return f"word positions start at {first}"
    if lengths is None or sentence >= len(lengths):
        return ""
    src_words, tgt_words = lengths[sentence]
    if link[0] < src_words and link[1] < tgt_words:
        return ""
    return f"it has {src_words} source and {tgt_words} target words"


def _check_range(
    link: Link,
    token: str,
    sentence: int,
    lengths: Optional[Lengths],
    name: str,
    lineno: int,
    hint: str = "",
) -> None:
    """Refuse a predicted ``link`` (0-based) outside sentence ``sentence`` (0-based)."""
    if lengths is None or sentence >= len(lengths):
        return
    src_words, tgt_words = lengths[sentence]
    if link[0] < src_words and link[1] < tgt_words:
        return
    raise _error(
        name,
        lineno,
        f"link {token!r} is out of range: sentence pair {sentence + 1} has {src_words} "
        f"source and {tgt_words} target words (line {sentence + 1} of --src/--tgt); fix "
        f"the link or give the --src/--tgt files that were aligned{hint}",
    )


def _parse_pharaoh_link(
    token: str, name: str, lineno: int, *, gold: bool, one_based: bool
) -> Tuple[Link, bool]:
    """``(link, possible_only)`` of one ``i-j`` / ``ipj`` token; the link is 0-based."""
    forms = "I-J (sure) or IpJ (possible)" if gold else "I-J"
    base = 1 if one_based else 0
    m = _PHARAOH_LINK.match(token)
    if m is None:
        raise _error(
            name,
            lineno,
            f"malformed link {token!r}; write links as {forms} with {base}-based word "
            "indices, separated by spaces",
        )
    if m.group(2) == "p" and not gold:
        raise _error(
            name,
            lineno,
            f"possible-link notation {token!r} is for gold files only; a prediction is a "
            f"plain set of links: write it as {m.group(1)}-{m.group(3)}",
        )
    i, j = int(m.group(1)), int(m.group(3))
    if min(i, j) < base and not gold:
        if base and min(i, j) == 0:
            fix = "indices start at 1 with --one-based-pred; drop that flag if the file is 0-based"
        else:
            fix = f"word indices are {base}-based, so the smallest is {base}"
        raise _error(name, lineno, f"link {token!r} has index {min(i, j)}; {fix}")
    return (i - base, j - base), m.group(2) == "p"


def parse_pharaoh_gold(lines: Sequence[str], name: str, lengths: Optional[Lengths] = None) -> Gold:
    """Gold from Pharaoh lines (``i-j`` sure, ``ipj`` possible, 0-based), one per pair.

    A link written both ways is sure. A link outside its sentence (a negative index, or
    past the end of ``lengths``) is left out. ``name`` is the file name for messages.
    """
    gold = []
    left_out = []
    for k, line in enumerate(lines):
        sure: Set[Link] = set()
        possible: Set[Link] = set()
        for token in line.split():
            try:
                link, possible_only = _parse_pharaoh_link(
                    token, name, k + 1, gold=True, one_based=False
                )
            except VecoUserError as exc:
                if not _looks_like_naacl(line):
                    raise
                raise VecoUserError(
                    f"{exc}; the line reads as NAACL ({_NAACL_FIELDS}): add --gold-format naacl"
                ) from None
            why = _outside(link, k, lengths, 0)
            if why:
                left_out.append((k + 1, f"{token!r}: {why}"))
            else:
                (possible if possible_only else sure).add(link)
        gold.append(GoldSentence(frozenset(sure), frozenset(sure | possible)))
    return Gold(gold, left_out)


def parse_predictions(
    lines: Sequence[str],
    name: str,
    one_based: bool = False,
    lengths: Optional[Lengths] = None,
) -> List[FrozenSet[Link]]:
    """Predicted links (0-based in the result) from Pharaoh lines ``i-j``, one per pair.

    ``one_based``: the file counts words from 1. ``ipj`` is refused.
    """
    hint = "" if one_based else "; if the file is 1-based, add --one-based-pred"
    predicted = []
    for k, line in enumerate(lines):
        links: Set[Link] = set()
        for token in line.split():
            try:
                link, _ = _parse_pharaoh_link(token, name, k + 1, gold=False, one_based=one_based)
            except VecoUserError as exc:
                raise VecoUserError(f"{exc}{_swap_hint(lines)}") from None
            _check_range(link, token, k, lengths, name, k + 1, hint)
            links.add(link)
        predicted.append(frozenset(links))
    return predicted


_READS_AS_PHARAOH = "the line reads as Pharaoh links (i-j, ipj): use --gold-format pharaoh"


def _swap_hint(pred_lines: Sequence[str]) -> str:
    """A hint when a prediction file reads as a NAACL gold file (the arguments swapped)."""
    first = next((line for line in pred_lines if line.split()), "")
    if not _looks_like_naacl(first):
        return ""
    return "; PRED reads as a NAACL gold file: give GOLD first, then PRED"


def _naacl_int(field: str, what: str, name: str, lineno: int, line: str) -> int:
    if not re.fullmatch(r"-?[0-9]+", field):
        raise _error(
            name,
            lineno,
            f"malformed line {line.strip()!r}: {what} {field!r} is not an integer; "
            f"write {_NAACL_FIELDS}",
        )
    return int(field)


def _naacl_sure(fields: Sequence[str], name: str, lineno: int, line: str) -> bool:
    """Whether the optional ``[S|P] [confidence]`` fields make the link sure."""
    extra = list(fields[3:])
    sure = True
    if extra and extra[0] in ("S", "P"):
        sure = extra.pop(0) == "S"
    if extra:
        try:
            confidence = float(extra[0])
        except ValueError:
            confidence = math.nan
        if len(extra) > 1 or not 0.0 < confidence <= 1.0:
            raise _error(
                name,
                lineno,
                f"malformed line {line.strip()!r}: after the link only S or P, then an "
                f"optional confidence in (0, 1], may follow; write {_NAACL_FIELDS}",
            )
    return sure


@dataclass(frozen=True)
class _NaaclLink:
    """One line of a NAACL file: ``label`` is its sentence_no, ``link`` 0-based."""

    lineno: int
    text: str
    label: int
    link: Link
    sure: bool


def _looks_like_naacl(line: str) -> bool:
    """Whether ``line`` has the fields of a NAACL link (3 to 5, the first three integers)."""
    fields = line.split()
    return 3 <= len(fields) <= 5 and all(re.fullmatch(r"-?[0-9]+", f) for f in fields[:3])


def _read_naacl_line(line: str, name: str, lineno: int) -> _NaaclLink:
    fields = line.split()
    if not 3 <= len(fields) <= 5:
        raise _error(
            name,
            lineno,
            f"malformed line {line.strip()!r}: expected 3 to 5 fields, {_NAACL_FIELDS}",
        )
    label = _naacl_int(fields[0], "sentence_no", name, lineno, line)
    if label < 0:
        raise _error(
            name,
            lineno,
            f"sentence_no is {label} in {line.strip()!r}; a sentence_no is a label >= 0 "
            "that orders the sentence pairs",
        )
    i = _naacl_int(fields[1], "position_L1", name, lineno, line)
    j = _naacl_int(fields[2], "position_L2", name, lineno, line)
    sure = _naacl_sure(fields, name, lineno, line)
    return _NaaclLink(lineno, " ".join(fields[:3]), label, (i - 1, j - 1), sure)


def parse_naacl_gold(lines: Sequence[str], name: str, lengths: Optional[Lengths] = None) -> Gold:
    """Gold from NAACL/WPT lines ``sentence_no i j [S|P] [confidence]`` (1-based words).

    The k-th smallest distinct sentence_no is sentence pair k (module docstring); blank
    lines are skipped. With ``lengths``, there must be one label per sentence pair. A
    link outside its sentence is left out.
    """
    links = []
    for lineno, line in enumerate(lines, start=1):
        if not line.split():
            continue
        try:
            links.append(_read_naacl_line(line, name, lineno))
        except VecoUserError as exc:
            if not all(_PHARAOH_LINK.match(token) for token in line.split()):
                raise
            raise VecoUserError(f"{exc}; {_READS_AS_PHARAOH}") from None
    labels = sorted({x.label for x in links})
    if lengths is not None and len(labels) != len(lengths):
        span = f", {labels[0]}..{labels[-1]}" if labels else ""
        raise VecoUserError(
            f"{name} labels {len(labels)} sentence pairs ({len(labels)} distinct sentence_no"
            f"{span}) but --src/--tgt have {len(lengths)} lines; the k-th smallest "
            "sentence_no is line k of --src/--tgt: give the --src/--tgt files of this gold "
            "standard"
        )
    index = {label: k for k, label in enumerate(labels)}
    sure: List[Set[Link]] = [set() for _ in labels]
    possible: List[Set[Link]] = [set() for _ in labels]
    left_out = []
    for x in links:
        k = index[x.label]
        why = _outside(x.link, k, lengths, 1)
        if why:
            line = f" = line {k + 1} of --src/--tgt" if lengths is not None else ""
            left_out.append((x.lineno, f"{x.text!r}, sentence_no {x.label}{line}: {why}"))
        else:
            (sure if x.sure else possible)[k].add(x.link)
    gold = [GoldSentence(frozenset(s), frozenset(s | p)) for s, p in zip(sure, possible)]
    return Gold(gold, left_out)


def count_links(gold: Sequence[GoldSentence], predicted: Sequence[AbstractSet[Link]]) -> AerCounts:
    """Corpus totals of ``gold`` against ``predicted`` (same number of sentence pairs)."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentence pairs but {len(predicted)} predicted")
    sure = possible = num_predicted = matched_sure = matched_possible = 0
    for g, a in zip(gold, predicted):
        sure += len(g.sure)
        possible += len(g.possible)
        num_predicted += len(a)
        matched_sure += len(g.sure & a)
        matched_possible += len(g.possible & a)
    return AerCounts(len(gold), sure, possible, num_predicted, matched_sure, matched_possible)


def _ratio(numerator: int, denominator: int) -> Fraction:
    """``numerator / denominator``, 0 when the denominator is 0."""
    return Fraction(numerator, denominator) if denominator else Fraction(0)


def aer_scores(counts: AerCounts) -> AerScores:
    """Precision, recall, F1 and AER of corpus totals (module docstring: definitions)."""
    precision = _ratio(counts.matched_possible, counts.predicted)
    recall = _ratio(counts.matched_sure, counts.sure)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else Fraction(0)
    aer = 1 - _ratio(counts.matched_sure + counts.matched_possible, counts.predicted + counts.sure)
    return AerScores(precision, recall, f1, aer)


def percent(value: Fraction) -> str:
    """``value`` (in [0, 1]) in percent with two decimals, rounded half up exactly."""
    hundredths = math.floor(value * 10000 + Fraction(1, 2))
    return f"{hundredths // 100}.{hundredths % 100:02d}"


def format_counts(counts: AerCounts) -> str:
    """``sentences N gold sure S possible P predicted A matched sure X possible Y``."""
    return (
        f"sentences {counts.sentences} gold sure {counts.sure} possible {counts.possible} "
        f"predicted {counts.predicted} matched sure {counts.matched_sure} "
        f"possible {counts.matched_possible}"
    )


def format_scores(scores: AerScores) -> str:
    """``precision P recall R f1 F aer A``, in percent with two decimals."""
    return (
        f"precision {percent(scores.precision)} recall {percent(scores.recall)} "
        f"f1 {percent(scores.f1)} aer {percent(scores.aer)}"
    )


def _refuse_gold_without_links(gold: Gold, name: str, lines: int, checked: bool) -> None:
    """A gold standard left without a single link (blank lines, or every link outside its
    sentence) has nothing to score against: refuse it rather than print AER 100."""
    if any(s.possible for s in gold.sentences):
        return
    if not gold.left_out:
        raise VecoUserError(
            f"{name} holds no gold links ({lines} blank line{'' if lines == 1 else 's'}): "
            "give the gold alignments to score against"
        )
    lineno, why = gold.left_out[0]
    fix = (
        "give the --src/--tgt files of this gold standard"
        if checked
        else "check its word positions (0-based in pharaoh, 1-based in naacl) and --gold-format"
    )
    raise VecoUserError(
        f"{name}: every gold link lies outside its sentence ({len(gold.left_out)} left out; "
        f"first: line {lineno} {why}): nothing to score; {fix}"
    )


def evaluate_files(
    gold_path: str,
    pred_path: str,
    gold_format: str = "pharaoh",
    one_based_pred: bool = False,
    src_path: Optional[str] = None,
    tgt_path: Optional[str] = None,
) -> AerCounts:
    """Read, check and count a gold file against a prediction file.

    Sentence counts are checked before any link, so a misaligned file is reported as
    such rather than as its first out-of-range link.
    """
    if gold_format not in GOLD_FORMATS:
        raise VecoUserError(
            f"unknown gold format {gold_format!r}; use one of {', '.join(GOLD_FORMATS)}"
        )
    if (src_path is None) != (tgt_path is None):
        raise VecoUserError("--src and --tgt go together: give both files or neither")
    lengths = None
    if src_path is not None and tgt_path is not None:
        src_lines, tgt_lines = read_lines(src_path, "--src"), read_lines(tgt_path, "--tgt")
        lengths = sentence_lengths(src_lines, tgt_lines, src_path, tgt_path)

    gold_lines = read_lines(gold_path)
    if not gold_lines:
        raise VecoUserError(f"{gold_path} is empty: give the gold alignments to score against")
    if gold_format == "pharaoh":
        if lengths is not None and len(gold_lines) != len(lengths):
            raise VecoUserError(
                f"{gold_path} has {len(gold_lines)} lines but --src/--tgt have "
                f"{len(lengths)}; give the --src/--tgt files of this gold standard"
            )
        gold = parse_pharaoh_gold(gold_lines, gold_path, lengths)
        source = "one line each"
    else:
        try:
            gold = parse_naacl_gold(gold_lines, gold_path, lengths)
        except VecoUserError as exc:
            if _READS_AS_PHARAOH in str(exc) and _swap_hint(read_lines(pred_path)):
                raise VecoUserError(
                    f"{gold_path} reads as Pharaoh links and {pred_path} as a NAACL gold "
                    "file: give GOLD first, then PRED"
                ) from None
            raise
        source = "one per distinct sentence_no, in ascending order"
    _refuse_gold_without_links(gold, gold_path, len(gold_lines), lengths is not None)

    pred_lines = read_lines(pred_path)
    if len(pred_lines) != len(gold.sentences):
        raise VecoUserError(
            f"{pred_path} has {len(pred_lines)} lines but {gold_path} has "
            f"{len(gold.sentences)} sentence pairs ({source}); write one line per sentence "
            f"pair, in order, an empty line for a pair without links{_swap_hint(pred_lines)}"
        )
    predicted = parse_predictions(pred_lines, pred_path, one_based_pred, lengths)
    if gold.left_out:
        lineno, why = gold.left_out[0]
        unchecked = "" if lengths is not None else "; give --src/--tgt to check their ends too"
        logger.warning(
            "%s: left out %d gold link%s outside %s sentence (first: line %d %s)%s",
            gold_path,
            len(gold.left_out),
            "" if len(gold.left_out) == 1 else "s",
            "its" if len(gold.left_out) == 1 else "their",
            lineno,
            why,
            unchecked,
        )
    counts = count_links(gold.sentences, predicted)
    warn_if_transposed(counts, gold.sentences, predicted, gold_path, pred_path)
    return counts


# the factor by which the swapped links must match more for a warning: the sides of a
# correct prediction match worse swapped (only the diagonal links match both ways)
TRANSPOSED = Fraction(5, 4)


def warn_if_transposed(
    counts: AerCounts,
    gold: Sequence[GoldSentence],
    predicted: Sequence[AbstractSet[Link]],
    gold_path: str,
    pred_path: str,
) -> None:
    """One warning line when the predictions match the gold clearly better with each link
    ``i-j`` read as ``j-i``: the aligner was given the sides in the other order than the
    gold's (``veco-align --src/--tgt``), and the scores mean little."""
    swapped = count_links(gold, [frozenset((j, i) for i, j in links) for links in predicted])
    if swapped.matched_possible > TRANSPOSED * counts.matched_possible:
        logger.warning(
            "%s matches %s better with its links read the other way round (%d of its links "
            "match read j-i, %d read i-j): were the sides swapped? Align with the gold's "
            "source as --src (veco-align --src SRC --tgt TGT for SRC-TGT gold)",
            pred_path,
            gold_path,
            swapped.matched_possible,
            counts.matched_possible,
        )
