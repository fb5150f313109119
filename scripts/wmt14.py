#!/usr/bin/env python3
"""Text stages of the WMT14 En-De / En-Fr pipeline, called by the shell scripts.

``scripts/prepare-wmt14en2{de,fr}.sh`` and ``scripts/evaluate-wmt14.sh`` hold the
flags and call the stock ``fairseq-*`` tools; this file does what needs Python::

    wmt14.py missing  --pair en-de --raw-dir RAW
        archive names (one a line) of which neither the archive nor its files are in RAW
    wmt14.py prepare  --pair en-de --raw-dir RAW --work-dir TMP --dest-dir BIN \\
                      --spm-model M | --bpe-codes C  [--max-len 250 --ratio 1.5 ...]
        TMP/{train,valid,test}.{en,de}: subword text for fairseq-preprocess
        BIN/{valid,test}.raw.{en,de}: untokenized valid/test text (sacreBLEU references)
    wmt14.py score    --generate-output gen.txt --raw-src S --raw-ref R --tgt de ...
        hypotheses in original order, subwords decoded, sacreBLEU + tokenized BLEU

Corpora (the standard WMT14 sets, statmt.org archive names)
    En-De train: Europarl v7, Common Crawl, News Commentary v9; valid newstest2013;
    En-Fr train: the same three plus UN (undoc.2000) and Gigaword 10^9 (giga-fren);
    valid newstest2012 + newstest2013; test: newstest2014 'full' (3003 sentences for
    En-De, read from ``test-full/newstest2014-deen-src.en.sgm`` and ``-ref.de.sgm``).
    Files are looked up in RAW as the archive, or as already-extracted files at any
    depth (by file name).

Reading
    Lines are split on ``\\n`` only and decoded as strict UTF-8: a bad byte stops the
    run with the file and line number (``--bad-utf8 drop`` drops that pair instead and
    counts it). All whitespace runs (tabs, stray ``\\r``, U+2028 ...) become one space,
    so fairseq-preprocess, which also breaks lines at ``\\r``, sees the same lines.
    The two sides of each corpus must have the same number of lines.
    SGML dev/test sets: the text of every ``<seg id=..>`` in file order; source and
    reference must list the same documents and segment ids. As in sacreBLEU, entities
    are not unescaped.

Cleaning (training data only; valid and test keep every sentence)
    A pair is dropped when a side is empty, when a side has fewer than ``--min-len`` or
    more than ``--max-len`` subword tokens, or when the token-count ratio exceeds
    ``--ratio``. Counts per corpus and reason are printed.

Subwords
    ``--spm-model`` (XLM-R's ``sentencepiece.bpe.model`` in the paper set-up), encoded
    with ``--workers`` threads, or ``--bpe-codes`` (fastBPE, applied to Moses-tokenized
    text; needs the ``fastBPE`` module).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import re
import sys
import tarfile
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

PROG = "wmt14.py"


class PipelineError(Exception):
    """Reported as one line on stderr, exit status 1."""


# ----------------------------------------------------------------------------- corpora


@dataclass(frozen=True)
class Corpus:
    """A line-parallel training corpus: ``<prefix>.<lang>`` inside ``archive``."""

    name: str
    archive: str
    prefix: str
    gz: bool = False  # members are ``<prefix>.<lang>.gz`` (Gigaword)

    def member(self, lang: str) -> str:
        return f"{self.prefix}.{lang}" + (".gz" if self.gz else "")


@dataclass(frozen=True)
class EvalSet:
    """An SGML dev/test set: source ``src_sgm`` and reference ``ref_sgm``."""

    name: str
    archive: str
    src_sgm: str
    ref_sgm: str
    plain: Optional[str] = None  # ``<plain>.<lang>`` fallback when no .sgm is there


ARCHIVE_URLS = {
    "training-parallel-europarl-v7.tgz": "http://statmt.org/wmt13/training-parallel-europarl-v7.tgz",  # noqa: E501
    "training-parallel-commoncrawl.tgz": "http://statmt.org/wmt13/training-parallel-commoncrawl.tgz",  # noqa: E501
    "training-parallel-nc-v9.tgz": "http://statmt.org/wmt14/training-parallel-nc-v9.tgz",  # noqa: E501
    "training-parallel-un.tgz": "http://statmt.org/wmt13/training-parallel-un.tgz",
    "training-giga-fren.tar": "http://statmt.org/wmt10/training-giga-fren.tar",
    "dev.tgz": "http://statmt.org/wmt14/dev.tgz",
    "test-full.tgz": "http://statmt.org/wmt14/test-full.tgz",
}


def _dev(name: str, src: str, tgt: str) -> EvalSet:
    return EvalSet(
        name,
        "dev.tgz",
        f"dev/{name}-src.{src}.sgm",
        f"dev/{name}-ref.{tgt}.sgm",
        plain=f"dev/{name}",
    )


def _test(src: str, tgt: str) -> EvalSet:
    xx = tgt if src == "en" else src
    return EvalSet(
        "newstest2014",
        "test-full.tgz",
        f"test-full/newstest2014-{xx}en-src.{src}.sgm",
        f"test-full/newstest2014-{xx}en-ref.{tgt}.sgm",
    )


def corpora_for(pair: str) -> Tuple[List[Corpus], List[EvalSet], List[EvalSet]]:
    """(train corpora, valid sets, test sets) of ``en-de`` or ``en-fr``."""
    src, tgt = pair.split("-")
    xx = tgt if src == "en" else src
    train = [
        Corpus(
            "europarl-v7",
            "training-parallel-europarl-v7.tgz",
            f"training/europarl-v7.{xx}-en",
        ),
        Corpus("commoncrawl", "training-parallel-commoncrawl.tgz", f"commoncrawl.{xx}-en"),
        Corpus(
            "news-commentary-v9",
            "training-parallel-nc-v9.tgz",
            f"training/news-commentary-v9.{xx}-en",
        ),
    ]
    if xx == "fr":
        train += [
            Corpus("un", "training-parallel-un.tgz", "un/undoc.2000.fr-en"),
            Corpus(
                "giga-fren",
                "training-giga-fren.tar",
                "giga-fren.release2.fixed",
                gz=True,
            ),
        ]
        valid = [_dev("newstest2012", src, tgt), _dev("newstest2013", src, tgt)]
    elif xx == "de":
        valid = [_dev("newstest2013", src, tgt)]
    else:
        raise PipelineError(f"unsupported pair {pair} (en-de, de-en, en-fr, fr-en)")
    return train, valid, [_test(src, tgt)]


# ----------------------------------------------------------------------------- locating


class RawDir:
    """Finds corpus files in ``--raw-dir``: extracted (any depth) or inside archives.

    Members needed from an archive are extracted into ``extract_dir`` in one streaming
    pass per archive.
    """

    def __init__(self, raw_dir: str, extract_dir: Optional[str] = None):
        if not os.path.isdir(raw_dir):
            raise PipelineError(f"--raw-dir {raw_dir} is not a directory")
        self.raw_dir = raw_dir
        self.extract_dir = extract_dir
        self._by_name: Dict[str, List[str]] = {}
        for root, _, names in os.walk(raw_dir):
            for name in names:
                self._by_name.setdefault(name, []).append(os.path.join(root, name))
        self.display: Dict[str, str] = {}  # local path -> name shown in messages

    def find_extracted(self, member: str) -> Optional[str]:
        """An extracted copy of ``member`` (or of its ``.gz`` / un-gzipped variant)."""
        candidates = [member]
        if member.endswith(".gz"):
            candidates.append(member[: -len(".gz")])
        for cand in candidates:
            exact = os.path.join(self.raw_dir, cand)
            if os.path.isfile(exact):
                return exact
            hits = sorted(self._by_name.get(os.path.basename(cand), []))
            if len(hits) > 1 and len({os.path.getsize(h) for h in hits}) > 1:
                raise PipelineError(
                    f"{len(hits)} different files named {os.path.basename(cand)} "
                    f"under {self.raw_dir} ({', '.join(hits[:3])}); keep one copy in "
                    "--raw-dir"
                )
            if hits:
                return hits[0]
        return None

    def find_archive(self, archive: str) -> Optional[str]:
        hits = sorted(self._by_name.get(archive, []))
        return hits[0] if hits else None

    def has(self, archive: str, members: Sequence[str]) -> bool:
        return self.find_archive(archive) is not None or all(
            self.find_extracted(m) for m in members
        )

    def resolve(
        self, archive: str, members: Sequence[str], required: bool = True
    ) -> Dict[str, Optional[str]]:
        """member -> local file path (extracting from ``archive`` where needed)."""
        found: Dict[str, Optional[str]] = {m: self.find_extracted(m) for m in members}
        missing = [m for m, p in found.items() if p is None]
        if missing:
            path = self.find_archive(archive)
            if path is not None:
                found.update(self._extract(path, missing))
        still = [m for m, p in found.items() if p is None]
        if still and required:
            where = self.find_archive(archive)
            inside = f" (not inside {where})" if where else f" and no {archive}"
            raise PipelineError(
                f"{', '.join(still)} not found in {self.raw_dir}{inside}; "
                f"download {ARCHIVE_URLS.get(archive, archive)} into --raw-dir"
            )
        return found

    def _extract(self, archive_path: str, members: Sequence[str]) -> Dict[str, str]:
        if self.extract_dir is None:
            raise PipelineError("internal: no extract dir for archives")
        wanted = {os.path.basename(m): m for m in members}
        out: Dict[str, str] = {}
        print(
            f"{PROG}: extracting {', '.join(members)} from {archive_path}",
            file=sys.stderr,
        )
        try:
            with tarfile.open(archive_path, "r|*") as tar:
                for info in tar:
                    base = os.path.basename(info.name)
                    if not info.isfile() or base not in wanted or wanted[base] in out:
                        continue
                    member = wanted[base]
                    dest = os.path.join(self.extract_dir, member)
                    os.makedirs(os.path.dirname(dest), exist_ok=True)
                    src = tar.extractfile(info)
                    assert src is not None
                    with open(dest + ".part", "wb") as f:
                        while True:
                            chunk = src.read(1 << 20)
                            if not chunk:
                                break
                            f.write(chunk)
                    os.replace(dest + ".part", dest)
                    out[member] = dest
                    self.display[dest] = f"{os.path.basename(archive_path)}:{info.name}"
                    if len(out) == len(wanted):
                        break
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise PipelineError(f"cannot read archive {archive_path}: {exc}") from exc
        return out

    def name(self, path: str) -> str:
        return self.display.get(path, path)


# ----------------------------------------------------------------------------- reading


def _open_bytes(path: str):
    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


def normalize(text: str) -> str:
    """Collapse every whitespace run (incl. ``\\r``, tabs, U+2028) to one space."""
    return " ".join(text.split())


class BadLine:
    """A line that is not UTF-8: where it is, for the error message."""

    def __init__(self, shown: str, lineno: int, exc: UnicodeDecodeError):
        self.shown, self.lineno, self.exc = shown, lineno, exc

    def message(self) -> str:
        byte = self.exc.object[self.exc.start : self.exc.start + 1].hex()
        return (
            f"{self.shown} line {self.lineno}: not valid UTF-8 "
            f"(byte 0x{byte} at column {self.exc.start + 1}); fix or remove that line, "
            f"or pass --bad-utf8 drop"
        )


def read_lines(path: str, shown: str, keep_raw: bool = False) -> Iterator[Union[str, BadLine]]:
    """Decoded, whitespace-normalized lines (``keep_raw``: only the line break stripped);
    a :class:`BadLine` where a line is not UTF-8 (the caller decides whether that is
    fatal)."""
    with _open_bytes(path) as f:
        for lineno, raw in enumerate(f, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield BadLine(shown, lineno, exc)
                continue
            yield text.rstrip("\r\n") if keep_raw else normalize(text)


def _count_rest(it: Iterator) -> int:
    return sum(1 for _ in it)


def read_parallel(
    src_path: str,
    tgt_path: str,
    src_shown: str,
    tgt_shown: str,
    bad_utf8: str,
    stats: Dict[str, int],
) -> Iterator[Tuple[str, str]]:
    """Line pairs of two aligned files; errors on bad UTF-8 or unequal line counts."""
    a_it, b_it = read_lines(src_path, src_shown), read_lines(tgt_path, tgt_shown)
    n = 0
    while True:
        a = next(a_it, StopIteration)
        b = next(b_it, StopIteration)
        if a is StopIteration or b is StopIteration:
            if a is StopIteration and b is StopIteration:
                return
            na = n + (0 if a is StopIteration else 1 + _count_rest(a_it))
            nb = n + (0 if b is StopIteration else 1 + _count_rest(b_it))
            raise PipelineError(
                f"{src_shown} has {na} lines but {tgt_shown} has {nb}: the sides of a "
                f"parallel corpus must match line by line (the usual cause is a stray "
                f"\\r or other line break inside a sentence, e.g. from a tool that "
                f"splits lines on \\r)"
            )
        n += 1
        if isinstance(a, BadLine) or isinstance(b, BadLine):
            if bad_utf8 == "error":
                raise PipelineError((a if isinstance(a, BadLine) else b).message())
            stats["bad_utf8"] = stats.get("bad_utf8", 0) + 1
            continue
        yield a, b


_SEG = re.compile(r"<seg\b[^>]*\bid\s*=\s*\"?([^\">\s]+)\"?[^>]*>(.*)</seg>", re.I)
_DOC = re.compile(r"<doc\b[^>]*\bdocid\s*=\s*\"([^\"]*)\"", re.I)


def read_sgm(path: str, shown: str) -> List[Tuple[Tuple[str, str], str]]:
    """[((docid, segid), text)] of an SGML dev/test file, in file order."""
    segs: List[Tuple[Tuple[str, str], str]] = []
    doc = ""
    for line in read_lines_strict(path, shown, keep_raw=True):
        m = _DOC.search(line)
        if m:
            doc = m.group(1)
        m = _SEG.search(line)
        if m:
            segs.append(((doc, m.group(1)), normalize(m.group(2))))
    if not segs:
        raise PipelineError(f"{shown}: no <seg id=..> lines; not a WMT SGML file")
    return segs


def read_lines_strict(path: str, shown: str, keep_raw: bool = False) -> List[str]:
    """All lines of :func:`read_lines`; the first that is not UTF-8 is an error."""
    out = []
    for line in read_lines(path, shown, keep_raw):
        if isinstance(line, BadLine):
            raise PipelineError(line.message()) from line.exc
        out.append(line)
    return out


def read_eval_set(raw: RawDir, es: EvalSet, src: str, tgt: str) -> Tuple[List[str], List[str], str]:
    """(source lines, reference lines, description) of a dev/test set."""
    found = raw.resolve(es.archive, [es.src_sgm, es.ref_sgm], required=es.plain is None)
    if found[es.src_sgm] and found[es.ref_sgm]:
        s_path, r_path = found[es.src_sgm], found[es.ref_sgm]
        assert s_path and r_path
        s_segs = read_sgm(s_path, raw.name(s_path))
        r_segs = read_sgm(r_path, raw.name(r_path))
        if [k for k, _ in s_segs] != [k for k, _ in r_segs]:
            raise PipelineError(
                f"{raw.name(s_path)} ({len(s_segs)} segments) and {raw.name(r_path)} "
                f"({len(r_segs)} segments) do not list the same documents/segment ids"
            )
        return [t for _, t in s_segs], [t for _, t in r_segs], "sgm"
    assert es.plain is not None
    members = [f"{es.plain}.{src}", f"{es.plain}.{tgt}"]
    plain = raw.resolve(es.archive, members)
    s_path, r_path = plain[members[0]], plain[members[1]]
    assert s_path and r_path
    s_lines = read_lines_strict(s_path, raw.name(s_path))
    r_lines = read_lines_strict(r_path, raw.name(r_path))
    if len(s_lines) != len(r_lines):
        raise PipelineError(
            f"{raw.name(s_path)} has {len(s_lines)} lines but {raw.name(r_path)} has "
            f"{len(r_lines)} (a stray \\r inside a line is the usual cause)"
        )
    return s_lines, r_lines, "plain"


# ----------------------------------------------------------------------------- subwords

Encoder = Callable[[List[str], str], List[List[str]]]


def spm_encoder(model: str, workers: int) -> Encoder:
    if not os.path.isfile(model):
        raise PipelineError(f"sentencepiece model {model} not found (--spm-model)")
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor()
    try:
        sp.Load(model)
    except (OSError, RuntimeError) as exc:
        raise PipelineError(f"cannot load sentencepiece model {model}: {exc}") from exc

    def encode(lines: List[str], lang: str) -> List[List[str]]:
        return sp.encode(lines, out_type=str, num_threads=workers)

    return encode


def fastbpe_encoder(codes: str, vocab: Optional[str]) -> Encoder:
    if not os.path.isfile(codes):
        raise PipelineError(f"BPE codes {codes} not found (--bpe-codes)")
    try:
        import fastBPE  # type: ignore[import-not-found]
    except ImportError as exc:
        raise PipelineError(
            "--bpe-codes needs the fastBPE Python module, which is not installed "
            "(pip install fastBPE; or use --spm-model)"
        ) from exc
    from sacremoses import MosesTokenizer

    bpe = fastBPE.fastBPE(codes, vocab or "")
    tokenizers: Dict[str, MosesTokenizer] = {}

    def encode(lines: List[str], lang: str) -> List[List[str]]:
        tok = tokenizers.setdefault(lang, MosesTokenizer(lang=lang))
        tokenized = [tok.tokenize(x, return_str=True, escape=False) for x in lines]
        return [x.split() for x in bpe.apply(tokenized)]

    return encode


# ----------------------------------------------------------------------------- prepare


@dataclass
class CleanConfig:
    min_len: int = 1
    max_len: int = 250
    ratio: float = 1.5


def keep_reason(a: List[str], b: List[str], cfg: CleanConfig) -> Optional[str]:
    """None to keep a training pair, else why it is dropped."""
    la, lb = len(a), len(b)
    if la == 0 or lb == 0:
        return "empty"
    if la < cfg.min_len or lb < cfg.min_len:
        return "too_short"
    if la > cfg.max_len or lb > cfg.max_len:
        return "too_long"
    if max(la, lb) > cfg.ratio * min(la, lb):
        return "ratio"
    return None


def _chunks(it: Iterator, size: int) -> Iterator[List]:
    buf: List = []
    for x in it:
        buf.append(x)
        if len(buf) == size:
            yield buf
            buf = []
    if buf:
        yield buf


def prepare(args: argparse.Namespace) -> Dict[str, object]:
    src, tgt = args.pair.split("-")
    train, valid, test = corpora_for(args.pair)
    if args.bpe_codes:
        encode = fastbpe_encoder(args.bpe_codes, args.bpe_vocab)
    else:
        encode = spm_encoder(args.spm_model, args.workers)
    cfg = CleanConfig(args.min_len, args.max_len, args.ratio)
    os.makedirs(args.work_dir, exist_ok=True)
    os.makedirs(args.dest_dir, exist_ok=True)
    raw = RawDir(args.raw_dir, os.path.join(args.work_dir, "orig"))
    report: Dict[str, object] = {"pair": args.pair, "train": {}}

    # valid/test first: small, and their errors are cheap to hit
    for split, sets in (("valid", valid), ("test", test)):
        src_lines: List[str] = []
        ref_lines: List[str] = []
        for es in sets:
            s, r, kind = read_eval_set(raw, es, src, tgt)
            print(
                f"{PROG}: {split}: {es.name} ({kind}) {len(s)} sentences",
                file=sys.stderr,
            )
            src_lines += s
            ref_lines += r
        for lang, lines in ((src, src_lines), (tgt, ref_lines)):
            _write(os.path.join(args.dest_dir, f"{split}.raw.{lang}"), lines)
            pieces = encode(lines, lang)
            _write(
                os.path.join(args.work_dir, f"{split}.{lang}"),
                [" ".join(p) for p in pieces],
            )
        report[split] = len(src_lines)

    out_src = open(os.path.join(args.work_dir, f"train.{src}"), "w", encoding="utf-8")
    out_tgt = open(os.path.join(args.work_dir, f"train.{tgt}"), "w", encoding="utf-8")
    total_kept = 0
    with out_src, out_tgt:
        for corpus in train:
            ms, mt = corpus.member(src), corpus.member(tgt)
            found = raw.resolve(corpus.archive, [ms, mt])
            ps, pt = found[ms], found[mt]
            assert ps and pt
            stats: Dict[str, int] = {"read": 0, "kept": 0}
            pairs = read_parallel(ps, pt, raw.name(ps), raw.name(pt), args.bad_utf8, stats)
            for chunk in _chunks(pairs, args.chunk_size):
                stats["read"] += len(chunk)
                enc_s = encode([a for a, _ in chunk], src)
                enc_t = encode([b for _, b in chunk], tgt)
                for a, b in zip(enc_s, enc_t):
                    reason = keep_reason(a, b, cfg)
                    if reason is not None:
                        stats[reason] = stats.get(reason, 0) + 1
                        continue
                    out_src.write(" ".join(a) + "\n")
                    out_tgt.write(" ".join(b) + "\n")
                    stats["kept"] += 1
            total_kept += stats["kept"]
            dropped = ", ".join(
                f"{k} {v}" for k, v in sorted(stats.items()) if k not in ("read", "kept")
            )
            kept = f"kept {stats['kept']} of {stats['read']} pairs"
            if dropped:
                kept += f" (dropped: {dropped})"
            print(f"{PROG}: train: {corpus.name}: {kept}", file=sys.stderr)
            report["train"][corpus.name] = stats  # type: ignore[index]
    if total_kept == 0:
        raise PipelineError("no training pairs left after cleaning")
    report["train_total"] = total_kept
    with open(os.path.join(args.work_dir, "prepare.json"), "w") as f:
        json.dump(report, f, indent=2)
    return report


def _write(path: str, lines: Sequence[str]) -> None:
    with open(path + ".part", "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")
    os.replace(path + ".part", path)


def missing(args: argparse.Namespace) -> List[str]:
    src, tgt = args.pair.split("-")
    train, valid, test = corpora_for(args.pair)
    raw = RawDir(args.raw_dir)
    need: Dict[str, List[str]] = {}
    for c in train:
        need.setdefault(c.archive, []).extend([c.member(src), c.member(tgt)])
    for es in valid + test:
        sgm = [es.src_sgm, es.ref_sgm]
        plain = [f"{es.plain}.{src}", f"{es.plain}.{tgt}"] if es.plain else []
        if plain and not raw.has(es.archive, sgm) and raw.has(es.archive, plain):
            continue  # the plain-text version is there: enough
        need.setdefault(es.archive, []).extend(sgm)
    out = [a for a, members in need.items() if not raw.has(a, members)]
    for a in out:
        print(f"{a}\t{ARCHIVE_URLS[a]}")
    return out


# ----------------------------------------------------------------------------- scoring

_HYP = re.compile(r"^H-(\d+)\t([^\t]*)\t?(.*)$")


def read_hypotheses(path: str, expected: int) -> List[str]:
    """Subword hypotheses of a fairseq-generate log, ordered by sentence id.

    Exactly one ``H-<id>`` per id ``0 .. expected-1`` is required.
    """
    hyps: Dict[int, str] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = _HYP.match(line.rstrip("\n"))
            if m is None:
                continue
            idx = int(m.group(1))
            if idx in hyps:
                raise PipelineError(f"{path}: two hypotheses for sentence {idx} (use --nbest 1)")
            hyps[idx] = m.group(3)
    missing_ids = sorted(set(range(expected)) - set(hyps))
    extra = sorted(set(hyps) - set(range(expected)))
    if missing_ids or extra:
        head = ", ".join(map(str, missing_ids[:5])) + (" ..." if len(missing_ids) > 5 else "")
        raise PipelineError(
            f"fairseq-generate wrote {len(hyps)} hypotheses for {expected} source "
            f"sentences ({path}; missing ids: {head or 'none'}; unexpected: "
            f"{len(extra)}): every sentence must be translated (check "
            "--required-batch-size-multiple 1 and "
            "--skip-invalid-size-inputs-valid-test)"
        )
    return [hyps[i] for i in range(expected)]


def decode_subwords(
    pieces: List[str], spm_model: Optional[str], subword: str, lang: str
) -> List[str]:
    """Plain text from subword hypotheses: sentencepiece decoding, or (fastBPE) joining
    ``@@ `` and Moses-detokenizing for ``lang``."""
    if subword == "sentencepiece":
        if not spm_model or not os.path.isfile(spm_model):
            raise PipelineError(f"sentencepiece model {spm_model} not found (--spm-model)")
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor()
        sp.Load(spm_model)
        return [normalize(sp.decode(p.split())) for p in pieces]
    if subword == "fastbpe":
        from sacremoses import MosesDetokenizer

        detok = MosesDetokenizer(lang=lang)
        return [detok.detokenize(re.sub(r"@@( |$)", "", p).split()) for p in pieces]
    raise PipelineError(f"unknown --subword {subword}")


def split_compounds(text: str) -> str:
    """WMT14 En-De convention: ``a-b`` -> ``a ##AT##-##AT## b`` (non-overlapping)."""
    return re.sub(r"(\S)-(\S)", r"\1 ##AT##-##AT## \2", text)


def moses_tokenized(lines: Sequence[str], lang: str) -> List[str]:
    from sacremoses import MosesTokenizer

    tok = MosesTokenizer(lang=lang)
    return [split_compounds(tok.tokenize(x, return_str=True)) for x in lines]


def score(args: argparse.Namespace) -> Dict[str, object]:
    from sacrebleu.metrics import BLEU

    refs = read_lines_strict(args.raw_ref, args.raw_ref)
    expected = len(refs)
    if args.raw_src:
        n_src = len(read_lines_strict(args.raw_src, args.raw_src))
        if n_src != expected:
            raise PipelineError(
                f"{args.raw_src} has {n_src} lines but {args.raw_ref} has {expected}"
            )
    pieces = read_hypotheses(args.generate_output, expected)
    hyps = decode_subwords(pieces, args.spm_model, args.subword, args.tgt)
    os.makedirs(os.path.dirname(os.path.abspath(args.hyp_out)), exist_ok=True)
    _write(args.hyp_out + ".subword", pieces)
    _write(args.hyp_out, hyps)

    detok = BLEU()
    d = detok.corpus_score(hyps, [refs])
    tok = BLEU(tokenize="none", force=True)
    t = tok.corpus_score(moses_tokenized(hyps, args.tgt), [moses_tokenized(refs, args.tgt)])
    result = {
        "sentences": expected,
        "hypotheses": args.hyp_out,
        "reference": args.raw_ref,
        "sacrebleu": {
            "score": d.score,
            "signature": str(detok.get_signature()),
            "text": d.format(signature=str(detok.get_signature())),
        },
        "tokenized_bleu": {
            "score": t.score,
            "signature": str(tok.get_signature()),
            "tokenizer": f"sacremoses -l {args.tgt} + compound splitting " "(##AT##-##AT##)",
            "text": t.format(),
        },
    }
    if args.checkpoint:
        result["checkpoint"] = args.checkpoint
    for key in ("sacrebleu", "tokenized_bleu"):
        if not math.isfinite(result[key]["score"]):  # type: ignore[index]
            raise PipelineError(f"{key} is not finite")
    print(f"sacreBLEU (detokenized, vs {args.raw_ref}): {result['sacrebleu']['text']}")
    print(
        f"tokenized BLEU (moses -l {args.tgt}, compound-split): "
        f"{result['tokenized_bleu']['text']}"
    )
    if args.json:
        with open(args.json + ".part", "w") as f:
            json.dump(result, f, indent=2)
        os.replace(args.json + ".part", args.json)
    return result


# ----------------------------------------------------------------------------- CLI


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    m = sub.add_parser("missing", help="list archives not present in --raw-dir")
    m.add_argument("--pair", required=True, choices=["en-de", "de-en", "en-fr", "fr-en"])
    m.add_argument("--raw-dir", required=True)

    p = sub.add_parser("prepare", help="extract, clean and subword-encode")
    p.add_argument("--pair", required=True, choices=["en-de", "de-en", "en-fr", "fr-en"])
    p.add_argument("--raw-dir", required=True)
    p.add_argument("--work-dir", required=True, help="subword text for fairseq-preprocess")
    p.add_argument("--dest-dir", required=True, help="gets {valid,test}.raw.<lang>")
    enc = p.add_mutually_exclusive_group(required=True)
    enc.add_argument("--spm-model")
    enc.add_argument("--bpe-codes")
    p.add_argument("--bpe-vocab", help="fastBPE vocabulary (optional)")
    p.add_argument("--min-len", type=int, default=1, help="min subword tokens a side")
    p.add_argument("--max-len", type=int, default=250, help="max subword tokens a side")
    p.add_argument("--ratio", type=float, default=1.5, help="max token-count ratio")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--bad-utf8", choices=["error", "drop"], default="error")
    p.add_argument("--chunk-size", type=int, default=100000)

    s = sub.add_parser("score", help="collect hypotheses, decode, sacreBLEU + tok BLEU")
    s.add_argument("--generate-output", required=True)
    s.add_argument("--raw-ref", required=True)
    s.add_argument("--raw-src")
    s.add_argument("--tgt", required=True)
    s.add_argument("--spm-model")
    s.add_argument("--subword", choices=["sentencepiece", "fastbpe"], default="sentencepiece")
    s.add_argument("--hyp-out", required=True)
    s.add_argument("--json")
    s.add_argument("--checkpoint")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = get_parser().parse_args(argv)
    try:
        if args.command == "missing":
            missing(args)
        elif args.command == "prepare":
            prepare(args)
        else:
            score(args)
    except PipelineError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
