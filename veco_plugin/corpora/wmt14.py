"""The WMT14 En-De / En-Fr corpora: archive registry, extraction, SGML dev/test sets,
cleaning and subword encoding (``veco-wmt14 missing|prepare``).

Corpora (the standard WMT14 sets, statmt.org archive names)
    En-De train: Europarl v7, Common Crawl, News Commentary v9; valid newstest2013;
    En-Fr train: the same three plus UN (undoc.2000) and Gigaword 10^9 (giga-fren);
    valid newstest2012 + newstest2013; test: newstest2014 'full' (3003 sentences for
    En-De, read from ``test-full/newstest2014-deen-src.en.sgm`` and ``-ref.de.sgm``).
    Files are looked up in RAW as the archive, or as already-extracted files at any
    depth (by file name).

Reading (:mod:`.text`)
    Lines are split on ``\\n`` only and decoded as strict UTF-8: a bad byte stops the
    run with the file and line number (``--bad-utf8 drop`` drops that pair instead and
    counts it). All whitespace runs become one space. The two sides of each corpus must
    have the same number of lines. SGML dev/test sets: the text of every ``<seg id=..>``
    in file order; source and reference must list the same documents and segment ids.
    As in sacreBLEU, entities are not unescaped.

Cleaning (training data only; valid and test keep every sentence)
    A pair is dropped when a side is empty, when a side has fewer than ``--min-len`` or
    more than ``--max-len`` subword tokens, or when the token-count ratio exceeds
    ``--ratio``. Counts per corpus and reason are printed and kept in
    ``WORK/prepare.json``.

Subwords (:mod:`.subwords`)
    ``--spm-model`` (XLM-R's ``sentencepiece.bpe.model`` in the paper set-up), encoded
    with ``--workers`` threads, or ``--bpe-codes`` (fastBPE, applied to Moses-tokenized
    text; needs the ``fastBPE`` module).
"""

from __future__ import annotations

import json
import os
import re
import sys
import tarfile
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import VecoUserError
from ..outputs import check_output_dir, write_text
from .subwords import Encoder, encode_lines, fastbpe_encoder, spm_encoder
from .text import (
    DropCounts,
    chunks,
    input_file,
    normalize,
    ratio_exceeds,
    read_lines_strict,
    read_parallel,
    write_lines,
)

PROG = "veco-wmt14"
PAIRS = ("en-de", "de-en", "en-fr", "fr-en")
FIX_BAD_UTF8 = "fix or remove that line, or pass --bad-utf8 drop"


def _say(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr)


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
        raise VecoUserError(f"unsupported pair {pair} (en-de, de-en, en-fr, fr-en)")
    return train, valid, [_test(src, tgt)]


# ----------------------------------------------------------------------------- locating


class RawDir:
    """Finds corpus files in ``--raw-dir``: extracted (any depth) or inside archives.

    Members needed from an archive are extracted into ``extract_dir`` in one streaming
    pass per archive.
    """

    def __init__(self, raw_dir: str, extract_dir: Optional[str] = None):
        if not os.path.isdir(raw_dir):
            raise VecoUserError(f"--raw-dir {raw_dir} is not a directory")
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
                raise VecoUserError(
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
            raise VecoUserError(
                f"{', '.join(still)} not found in {self.raw_dir}{inside}; "
                f"download {ARCHIVE_URLS.get(archive, archive)} into --raw-dir"
            )
        return found

    def _extract(self, archive_path: str, members: Sequence[str]) -> Dict[str, str]:
        if self.extract_dir is None:
            raise VecoUserError("internal: no extract dir for archives")
        wanted = {os.path.basename(m): m for m in members}
        out: Dict[str, str] = {}
        _say(f"extracting {', '.join(members)} from {archive_path}")
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
            raise VecoUserError(f"cannot read archive {archive_path}: {exc}") from exc
        return out

    def name(self, path: str) -> str:
        return self.display.get(path, path)


# ----------------------------------------------------------------------------- dev/test

_SEG = re.compile(r"<seg\b[^>]*\bid\s*=\s*\"?([^\">\s]+)\"?[^>]*>(.*)</seg>", re.I)
_DOC = re.compile(r"<doc\b[^>]*\bdocid\s*=\s*\"([^\"]*)\"", re.I)


def read_sgm(path: str, shown: str) -> List[Tuple[Tuple[str, str], str]]:
    """[((docid, segid), text)] of an SGML dev/test file, in file order."""
    segs: List[Tuple[Tuple[str, str], str]] = []
    doc = ""
    for line in read_lines_strict(path, shown, keep_raw=True, fix=FIX_BAD_UTF8):
        m = _DOC.search(line)
        if m:
            doc = m.group(1)
        m = _SEG.search(line)
        if m:
            segs.append(((doc, m.group(1)), normalize(m.group(2))))
    if not segs:
        raise VecoUserError(f"{shown}: no <seg id=..> lines; not a WMT SGML file")
    return segs


def read_eval_set(raw: RawDir, es: EvalSet, src: str, tgt: str) -> Tuple[List[str], List[str], str]:
    """(source lines, reference lines, description) of a dev/test set."""
    found = raw.resolve(es.archive, [es.src_sgm, es.ref_sgm], required=es.plain is None)
    if found[es.src_sgm] and found[es.ref_sgm]:
        s_path, r_path = found[es.src_sgm], found[es.ref_sgm]
        assert s_path and r_path
        s_segs = read_sgm(s_path, raw.name(s_path))
        r_segs = read_sgm(r_path, raw.name(r_path))
        if [k for k, _ in s_segs] != [k for k, _ in r_segs]:
            raise VecoUserError(
                f"{raw.name(s_path)} ({len(s_segs)} segments) and {raw.name(r_path)} "
                f"({len(r_segs)} segments) do not list the same documents/segment ids"
            )
        return [t for _, t in s_segs], [t for _, t in r_segs], "sgm"
    assert es.plain is not None
    members = [f"{es.plain}.{src}", f"{es.plain}.{tgt}"]
    plain = raw.resolve(es.archive, members)
    s_path, r_path = plain[members[0]], plain[members[1]]
    assert s_path and r_path
    s_lines = read_lines_strict(s_path, raw.name(s_path), fix=FIX_BAD_UTF8)
    r_lines = read_lines_strict(r_path, raw.name(r_path), fix=FIX_BAD_UTF8)
    if len(s_lines) != len(r_lines):
        raise VecoUserError(
            f"{raw.name(s_path)} has {len(s_lines)} lines but {raw.name(r_path)} has "
            f"{len(r_lines)} (a stray \\r inside a line is the usual cause)"
        )
    return s_lines, r_lines, "plain"


# ----------------------------------------------------------------------------- prepare


@dataclass(frozen=True)
class CleanConfig:
    """Training-pair filter, in subword tokens per side (``veco-wmt14 prepare``'s flags
    are these fields: :func:`veco_plugin.cli.config_flags.add_config_flags`)."""

    min_len: int = field(default=1, metadata={"help": "min subword tokens a side"})
    max_len: int = field(default=250, metadata={"help": "max subword tokens a side"})
    ratio: float = field(default=1.5, metadata={"help": "max token-count ratio"})


def keep_reason(a: List[str], b: List[str], cfg: CleanConfig) -> Optional[str]:
    """None to keep a training pair, else why it is dropped."""
    la, lb = len(a), len(b)
    if la == 0 or lb == 0:
        return "empty"
    if la < cfg.min_len or lb < cfg.min_len:
        return "too_short"
    if la > cfg.max_len or lb > cfg.max_len:
        return "too_long"
    if ratio_exceeds(la, lb, cfg.ratio):
        return "ratio"
    return None


@dataclass(frozen=True)
class PrepareConfig:
    """Everything ``veco-wmt14 prepare`` needs (built once from the command line: its
    flags are these fields, but ``drop_bad_utf8`` is ``--bad-utf8 {error,drop}``)."""

    pair: str = field(metadata={"choices": PAIRS})
    raw_dir: str
    work_dir: str = field(metadata={"help": "subword text for fairseq-preprocess"})
    dest_dir: str = field(metadata={"help": "gets {valid,test}.raw.<lang>"})
    spm_model: Optional[str] = None
    bpe_codes: Optional[str] = None
    bpe_vocab: Optional[str] = field(
        default=None, metadata={"help": "fastBPE vocabulary (optional)"}
    )
    clean: CleanConfig = CleanConfig()
    workers: int = 1
    drop_bad_utf8: bool = False
    chunk_size: int = 100000
    no_download: bool = field(
        default=False,
        metadata={"help": "first check that no archive is missing (the error names its URL)"},
    )


def check_config(cfg: PrepareConfig) -> None:
    """Refuse flags that cannot make a corpus, and outputs that cannot be written, before
    any reading."""
    if not os.path.isdir(cfg.raw_dir):
        raise VecoUserError(f"--raw-dir {cfg.raw_dir} is not a directory")
    for flag, value in (
        ("--min-len", cfg.clean.min_len),
        ("--workers", cfg.workers),
        ("--chunk-size", cfg.chunk_size),
    ):
        if value < 1:
            raise VecoUserError(f"{flag} must be >= 1, got {value}")
    if cfg.clean.max_len < cfg.clean.min_len:
        raise VecoUserError(
            f"--max-len {cfg.clean.max_len} is below --min-len {cfg.clean.min_len}: every "
            "training pair would be dropped"
        )
    if not cfg.clean.ratio >= 1:
        raise VecoUserError(
            f"--ratio must be >= 1 (longer side / shorter side), got {cfg.clean.ratio}"
        )
    if cfg.bpe_vocab and not cfg.bpe_codes:
        raise VecoUserError("--bpe-vocab goes with --bpe-codes (fastBPE), not --spm-model")
    if cfg.bpe_vocab:
        input_file(cfg.bpe_vocab, "--bpe-vocab")
    check_output_dir(cfg.work_dir, "--work-dir")
    check_output_dir(cfg.dest_dir, "--dest-dir")


def _encoder(cfg: PrepareConfig) -> Encoder:
    if cfg.bpe_codes:
        return fastbpe_encoder(cfg.bpe_codes, cfg.bpe_vocab)
    if not cfg.spm_model:
        raise VecoUserError("one of --spm-model and --bpe-codes is required")
    return spm_encoder(cfg.spm_model, cfg.workers)


def _prepare_eval(
    cfg: PrepareConfig, raw: RawDir, encode: Encoder, split: str, sets: Sequence[EvalSet]
) -> int:
    """Write DEST/{split}.raw.<lang> and WORK/{split}.<lang>; the number of sentences."""
    src, tgt = cfg.pair.split("-")
    src_lines: List[str] = []
    ref_lines: List[str] = []
    for es in sets:
        s, r, kind = read_eval_set(raw, es, src, tgt)
        _say(f"{split}: {es.name} ({kind}) {len(s)} sentences")
        src_lines += s
        ref_lines += r
    for lang, lines in ((src, src_lines), (tgt, ref_lines)):
        write_lines(os.path.join(cfg.dest_dir, f"{split}.raw.{lang}"), lines)
        write_lines(
            os.path.join(cfg.work_dir, f"{split}.{lang}"), encode_lines(encode, lines, lang)
        )
    return len(src_lines)


def _prepare_train(
    cfg: PrepareConfig, raw: RawDir, encode: Encoder, train: Sequence[Corpus]
) -> Dict[str, DropCounts]:
    """Clean and encode every training corpus into WORK/train.<lang> (both written
    atomically, none when no pair is left); counts per corpus."""
    src, tgt = cfg.pair.split("-")
    paths = [os.path.join(cfg.work_dir, f"train.{lang}") for lang in (src, tgt)]
    try:
        counts = _write_train(cfg, raw, encode, train, [f"{p}.part" for p in paths])
        if sum(c.kept for c in counts.values()) == 0:
            raise VecoUserError(
                "no training pairs left after cleaning: "
                + "; ".join(f"{n}: {c.summary()}" for n, c in counts.items())
            )
        for path in paths:
            os.replace(f"{path}.part", path)
    finally:
        for path in paths:
            if os.path.exists(f"{path}.part"):
                os.remove(f"{path}.part")
    return counts


def _write_train(
    cfg: PrepareConfig, raw: RawDir, encode: Encoder, train: Sequence[Corpus], paths: List[str]
) -> Dict[str, DropCounts]:
    """The cleaned, encoded pairs of every corpus into ``paths`` (source, target)."""
    src, tgt = cfg.pair.split("-")
    out_src = open(paths[0], "w", encoding="utf-8")
    out_tgt = open(paths[1], "w", encoding="utf-8")
    counts: Dict[str, DropCounts] = {}
    with out_src, out_tgt:
        for corpus in train:
            ms, mt = corpus.member(src), corpus.member(tgt)
            found = raw.resolve(corpus.archive, [ms, mt])
            ps, pt = found[ms], found[mt]
            assert ps and pt
            stats = counts[corpus.name] = DropCounts()
            pairs = read_parallel(
                ps, pt, raw.name(ps), raw.name(pt), stats, cfg.drop_bad_utf8, FIX_BAD_UTF8
            )
            for chunk in chunks(pairs, cfg.chunk_size):
                stats.read += len(chunk)
                enc_s = encode([a for a, _ in chunk], src)
                enc_t = encode([b for _, b in chunk], tgt)
                for a, b in zip(enc_s, enc_t):
                    if stats.keep(keep_reason(a, b, cfg.clean)):
                        out_src.write(" ".join(a) + "\n")
                        out_tgt.write(" ".join(b) + "\n")
            _say(f"train: {corpus.name}: {stats.summary()}")
    return counts


def prepare(cfg: PrepareConfig) -> Dict[str, object]:
    """Valid/test (every sentence, raw text into DEST) and cleaned training pairs, all
    subword-encoded into WORK for fairseq-preprocess; the report in WORK/prepare.json."""
    train, valid, test = corpora_for(cfg.pair)
    check_config(cfg)
    if cfg.no_download:
        for archive, url in missing_archives(cfg.pair, cfg.raw_dir):
            raise VecoUserError(f"{archive} is not in {cfg.raw_dir} (and --no-download): get {url}")
    encode = _encoder(cfg)
    os.makedirs(cfg.work_dir, exist_ok=True)
    os.makedirs(cfg.dest_dir, exist_ok=True)
    raw = RawDir(cfg.raw_dir, os.path.join(cfg.work_dir, "orig"))
    report: Dict[str, object] = {"pair": cfg.pair, "train": {}}
    # valid/test first: small, and their errors are cheap to hit
    report["valid"] = _prepare_eval(cfg, raw, encode, "valid", valid)
    report["test"] = _prepare_eval(cfg, raw, encode, "test", test)
    counts = _prepare_train(cfg, raw, encode, train)
    report["train"] = {name: c.as_dict() for name, c in counts.items()}
    report["train_total"] = sum(c.kept for c in counts.values())
    write_text(os.path.join(cfg.work_dir, "prepare.json"), json.dumps(report, indent=2))
    return report


def missing_archives(pair: str, raw_dir: str) -> List[Tuple[str, str]]:
    """(archive, URL) of every archive of which neither the archive nor the needed
    files are in ``raw_dir`` (for dev/test, the plain-text version is enough)."""
    src, tgt = pair.split("-")
    train, valid, test = corpora_for(pair)
    raw = RawDir(raw_dir)
    need: Dict[str, List[str]] = {}
    for c in train:
        need.setdefault(c.archive, []).extend([c.member(src), c.member(tgt)])
    for es in valid + test:
        sgm = [es.src_sgm, es.ref_sgm]
        plain = [f"{es.plain}.{src}", f"{es.plain}.{tgt}"] if es.plain else []
        if plain and not raw.has(es.archive, sgm) and raw.has(es.archive, plain):
            continue  # the plain-text version is there: enough
        need.setdefault(es.archive, []).extend(sgm)
    return [(a, ARCHIVE_URLS[a]) for a, members in need.items() if not raw.has(a, members)]
