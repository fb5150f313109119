"""Build a small WMT14-shaped raw directory filled with real English-German/French text.

The text comes from the system's gettext catalogs
(``/usr/share/locale/<lang>/LC_MESSAGES/*.mo``): every entry is a human translation of
an English user-interface message. :func:`build_wmt14_raw` writes it under the
statmt.org archive names with the archives' internal layout, so the prepare scripts
read the fixture through exactly the code path they use for the real downloads::

    training-parallel-europarl-v7.tgz   training/europarl-v7.{de,fr}-en.{en,de,fr}
    training-parallel-commoncrawl.tgz   commoncrawl.{de,fr}-en.{en,de,fr,annotation}
    training-parallel-nc-v9.tgz         training/news-commentary-v9.{de,fr}-en.*
    training-parallel-un.tgz            un/undoc.2000.fr-en.{en,fr}
    training-giga-fren.tar              giga-fren.release2.fixed.{en,fr}.gz
    dev.tgz                             dev/newstest201{2,3}.{en,de,fr} (plain) and
                                        dev/newstest201{2,3}-{src,ref}.{en,de,fr}.sgm
    test-full.tgz                       test-full/newstest2014-{de,fr}en-{src,ref}.*.sgm

With ``extracted=True`` the same files are written unpacked (``--raw-dir`` accepts
both), which the bad-input tests use to corrupt one file.
"""

from __future__ import annotations

import gettext
import glob
import gzip
import io
import os
import random
import tarfile
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

LOCALE_DIR = "/usr/share/locale"

Pair = Tuple[str, str]


def _clean(text: str) -> str:
    return " ".join(text.split())


def read_gettext_pairs(lang: str, locale_dir: str = LOCALE_DIR) -> List[Pair]:
    """(English msgid, translation) pairs from all ``.mo`` catalogs of ``lang``.

    Skips the header entry, plural forms (tuple keys), context-prefixed ids, empty or
    untranslated entries; whitespace is collapsed. Deduplicated on the English side
    (first catalog in sorted order wins), returned sorted by English text.
    """
    pairs: Dict[str, str] = {}
    for path in sorted(glob.glob(os.path.join(locale_dir, lang, "LC_MESSAGES", "*.mo"))):
        try:
            with open(path, "rb") as f:
                catalog = gettext.GNUTranslations(f)._catalog
        except (OSError, UnicodeDecodeError, ValueError):
            continue  # a few catalogs declare one charset and use another
        for msgid, msgstr in catalog.items():
            if not isinstance(msgid, str) or not msgid or "\x04" in msgid:
                continue
            en, tr = _clean(msgid), _clean(msgstr)
            if not en or not tr or en == tr or "seg" in en + tr:
                continue
            if len(en.split()) < 3 or len(en) > 200 or len(tr) > 250:
                continue
            pairs.setdefault(en, tr)
    return sorted(pairs.items())


def have_catalogs(langs: Sequence[str] = ("de",), locale_dir: str = LOCALE_DIR) -> bool:
    return all(glob.glob(os.path.join(locale_dir, lang, "LC_MESSAGES", "*.mo")) for lang in langs)


@dataclass
class LangSplits:
    """What the fixture holds for one pair en-<lang> (train per corpus, dev, test)."""

    train: Dict[str, List[Pair]] = field(default_factory=dict)
    valid: Dict[str, List[Pair]] = field(default_factory=dict)  # newstest -> pairs
    test: List[Pair] = field(default_factory=list)

    @property
    def n_train(self) -> int:
        return sum(len(p) for p in self.train.values())

    @property
    def n_valid(self) -> int:
        return sum(len(p) for p in self.valid.values())


@dataclass
class WmtFixture:
    raw_dir: str
    langs: Dict[str, LangSplits]


# corpus prefix (inside its archive) -> share of the training pairs
_TRAIN_CORPORA = {
    "de": [
        ("training-parallel-europarl-v7.tgz", "training/europarl-v7.de-en", 0.5),
        ("training-parallel-commoncrawl.tgz", "commoncrawl.de-en", 0.3),
        ("training-parallel-nc-v9.tgz", "training/news-commentary-v9.de-en", 0.2),
    ],
    "fr": [
        ("training-parallel-europarl-v7.tgz", "training/europarl-v7.fr-en", 0.3),
        ("training-parallel-commoncrawl.tgz", "commoncrawl.fr-en", 0.2),
        ("training-parallel-nc-v9.tgz", "training/news-commentary-v9.fr-en", 0.1),
        ("training-parallel-un.tgz", "un/undoc.2000.fr-en", 0.2),
        ("training-giga-fren.tar", "giga-fren.release2.fixed", 0.2),
    ],
}
# valid sets per language: newstest2013 for En-De; newstest2012 + 2013 for En-Fr
_DEV_SETS = {"de": ["newstest2013"], "fr": ["newstest2012", "newstest2013"]}


def _sgm(pairs: Sequence[Pair], side: int, setid: str, kind: str, lang: str) -> str:
    """SGML as in the WMT dev/test archives: docs of <seg id=..> lines, 1-based ids."""
    if kind == "src":
        head = f'<srcset setid="{setid}" srclang="any">'
        tail = "</srcset>"
    else:
        head = f'<refset setid="{setid}" srclang="any" trglang="{lang}">'
        tail = "</refset>"
    lines = [head]
    doc_size = 37  # several documents, segment ids restart in each
    for start in range(0, len(pairs), doc_size):
        doc = pairs[start : start + doc_size]
        lines.append(
            f'<doc sysid="ref" docid="{start // doc_size + 1:04d}-fixture" '
            f'genre="news" origlang="en">'
        )
        lines.append("<p>")
        for i, pair in enumerate(doc, start=1):
            lines.append(f'<seg id="{i}">{pair[side]}</seg>')
        lines.append("</p>")
        lines.append("</doc>")
    lines.append(tail)
    return "\n".join(lines) + "\n"


def _lines(texts: Sequence[str]) -> bytes:
    return "".join(t + "\n" for t in texts).encode("utf-8")


def _split_pairs(
    catalog: Dict[str, str],
    dev_english: Dict[str, List[str]],
    n_train: int,
    n_test: int,
    lang: str,
    seed: int,
) -> LangSplits:
    held_out = {en for ens in dev_english.values() for en in ens}
    pairs = [(en, tr) for en, tr in sorted(catalog.items()) if en not in held_out]
    random.Random(seed).shuffle(pairs)
    if len(pairs) < n_test + n_train:
        raise RuntimeError(
            f"only {len(pairs)} gettext pairs for en-{lang}, need {n_test + n_train}"
        )
    splits = LangSplits(test=pairs[:n_test])
    for name in _DEV_SETS[lang]:
        splits.valid[name] = [(en, catalog[en]) for en in dev_english[name]]
    train = pairs[n_test : n_test + n_train]
    start = 0
    corpora = _TRAIN_CORPORA[lang]
    for i, (_, prefix, share) in enumerate(corpora):
        end = len(train) if i == len(corpora) - 1 else start + int(share * len(train))
        splits.train[prefix] = train[start:end]
        start = end
    return splits


def _dev_english(
    catalogs: Dict[str, Dict[str, str]], n_dev: int, seed: int
) -> Dict[str, List[str]]:
    """English side of each newstest dev set, shared by all languages (as in WMT,
    where newstest2013.en is the same file for every pair): drawn from the English
    messages that every requested language translates."""
    common = sorted(set.intersection(*(set(c) for c in catalogs.values())))
    random.Random(seed + 1).shuffle(common)
    names = sorted({name for lang in catalogs for name in _DEV_SETS[lang]})
    if len(common) < n_dev * len(names):
        raise RuntimeError(f"only {len(common)} shared English messages for dev sets")
    return {name: common[i * n_dev : (i + 1) * n_dev] for i, name in enumerate(names)}


def _files_for(lang: str, splits: LangSplits) -> Dict[str, Dict[str, bytes]]:
    """archive name -> {member path: content}."""
    files: Dict[str, Dict[str, bytes]] = {}
    for archive, prefix, _ in _TRAIN_CORPORA[lang]:
        pairs = splits.train[prefix]
        en = _lines([p[0] for p in pairs])
        xx = _lines([p[1] for p in pairs])
        members = files.setdefault(archive, {})
        if prefix.startswith("giga-fren"):
            members[f"{prefix}.en.gz"] = gzip.compress(en, mtime=0)
            members[f"{prefix}.{lang}.gz"] = gzip.compress(xx, mtime=0)
        else:
            members[f"{prefix}.en"] = en
            members[f"{prefix}.{lang}"] = xx
        if prefix.startswith("commoncrawl"):
            urls = [f"http://example.org/{lang}/{i}" for i in range(len(pairs))]
            members[f"{prefix}.annotation"] = _lines(urls)
    dev = files.setdefault("dev.tgz", {})
    for name, pairs in splits.valid.items():
        dev[f"dev/{name}.en"] = _lines([p[0] for p in pairs])
        dev[f"dev/{name}.{lang}"] = _lines([p[1] for p in pairs])
        dev[f"dev/{name}-src.en.sgm"] = _sgm(pairs, 0, name, "src", "en").encode()
        dev[f"dev/{name}-ref.{lang}.sgm"] = _sgm(pairs, 1, name, "ref", lang).encode()
    test = files.setdefault("test-full.tgz", {})
    pair = f"{lang}en"
    for kind_en, kind_xx in (("src", "ref"), ("ref", "src")):
        test[f"test-full/newstest2014-{pair}-{kind_en}.en.sgm"] = _sgm(
            splits.test, 0, "newstest2014", kind_en, "en"
        ).encode()
        test[f"test-full/newstest2014-{pair}-{kind_xx}.{lang}.sgm"] = _sgm(
            splits.test, 1, "newstest2014", kind_xx, lang
        ).encode()
    return files


def _write_archive(path: str, members: Dict[str, bytes]) -> None:
    mode = "w" if path.endswith(".tar") else "w:gz"
    with tarfile.open(path, mode) as tar:
        for name in sorted(members):
            info = tarfile.TarInfo(name)
            info.size = len(members[name])
            info.mtime = 0
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(members[name]))


def build_wmt14_raw(
    raw_dir: str,
    langs: Sequence[str] = ("de",),
    n_train: int = 3000,
    n_dev: int = 100,
    n_test: int = 203,
    extracted: bool = False,
    seed: int = 14,
    locale_dir: str = LOCALE_DIR,
) -> WmtFixture:
    """Write the fixture into ``raw_dir`` (created); returns what it holds.

    ``n_test`` defaults to 203 on purpose: not a multiple of 8, fairseq's default
    ``--required-batch-size-multiple``.
    """
    os.makedirs(raw_dir, exist_ok=True)
    all_files: Dict[str, Dict[str, bytes]] = {}
    info = WmtFixture(raw_dir=raw_dir, langs={})
    catalogs = {lang: dict(read_gettext_pairs(lang, locale_dir)) for lang in langs}
    dev_english = _dev_english(catalogs, n_dev, seed)
    for lang in langs:
        splits = _split_pairs(catalogs[lang], dev_english, n_train, n_test, lang, seed)
        info.langs[lang] = splits
        for archive, members in _files_for(lang, splits).items():
            all_files.setdefault(archive, {}).update(members)
    for archive, members in all_files.items():
        if extracted:
            for name, content in members.items():
                path = os.path.join(raw_dir, name)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as f:
                    f.write(content)
        else:
            _write_archive(os.path.join(raw_dir, archive), members)
    return info


def write_lines(path: str, texts: Sequence[str]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for t in texts:
            f.write(t + "\n")


def first_member(raw_dir: str, basename: str) -> Optional[str]:
    """Path of an extracted fixture file by basename (for the corruption tests)."""
    for root, _, names in os.walk(raw_dir):
        if basename in names:
            return os.path.join(root, basename)
    return None
