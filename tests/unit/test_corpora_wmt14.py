"""veco_plugin.corpora.wmt14: the archive registry, finding and extracting members, SGML
dev/test sets and the training-pair filter (the shell scripts on a full WMT-shaped
fixture: tests/integration/test_wmt14_scripts.py)."""

import io
import tarfile

import pytest

from veco_plugin.corpora import wmt14
from veco_plugin.errors import VecoUserError


def _tgz(path, members):
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _sgm(setid, lang, segs):
    body = "".join(f'<seg id="{i}">{t}</seg>\n' for i, t in segs)
    return (
        f'<srcset setid="{setid}" srclang="any">\n<doc sysid="ref" docid="d1" '
        f'genre="news" origlang="{lang}">\n{body}</doc>\n</srcset>\n'
    ).encode("utf-8")


def test_registry_of_both_pairs():
    train, valid, test = wmt14.corpora_for("en-de")
    assert [c.name for c in train] == ["europarl-v7", "commoncrawl", "news-commentary-v9"]
    assert [v.name for v in valid] == ["newstest2013"]
    assert test[0].src_sgm == "test-full/newstest2014-deen-src.en.sgm"
    assert test[0].ref_sgm == "test-full/newstest2014-deen-ref.de.sgm"
    train, valid, _ = wmt14.corpora_for("en-fr")
    assert [c.name for c in train][-2:] == ["un", "giga-fren"]
    assert train[-1].member("fr") == "giga-fren.release2.fixed.fr.gz"
    assert [v.name for v in valid] == ["newstest2012", "newstest2013"]
    assert all(c.archive in wmt14.ARCHIVE_URLS for c in train)
    with pytest.raises(VecoUserError, match="unsupported pair en-cs"):
        wmt14.corpora_for("en-cs")


def test_raw_dir_finds_extracted_files_at_any_depth(tmp_path):
    (tmp_path / "deep" / "er").mkdir(parents=True)
    (tmp_path / "deep" / "er" / "commoncrawl.de-en.en").write_text("x\n")
    raw = wmt14.RawDir(str(tmp_path))
    assert raw.find_extracted("commoncrawl.de-en.en").endswith("deep/er/commoncrawl.de-en.en")
    assert raw.find_extracted("commoncrawl.de-en.de") is None
    # two different files of one name are ambiguous
    (tmp_path / "commoncrawl.de-en.de").write_text("a\n")
    (tmp_path / "deep" / "commoncrawl.de-en.de").write_text("bb\n")
    with pytest.raises(VecoUserError, match="2 different files named commoncrawl.de-en.de"):
        wmt14.RawDir(str(tmp_path)).find_extracted("x/commoncrawl.de-en.de")
    with pytest.raises(VecoUserError, match="is not a directory"):
        wmt14.RawDir(str(tmp_path / "nope"))


def test_raw_dir_extracts_members_and_names_the_archive(tmp_path, capsys):
    raw_dir, work = tmp_path / "raw", tmp_path / "work"
    raw_dir.mkdir()
    _tgz(raw_dir / "dev.tgz", {"dev/newstest2013.en": b"Hello\n", "dev/other": b"-"})
    raw = wmt14.RawDir(str(raw_dir), str(work))
    found = raw.resolve("dev.tgz", ["dev/newstest2013.en"])
    path = found["dev/newstest2013.en"]
    assert open(path).read() == "Hello\n" and path.startswith(str(work))
    assert raw.name(path) == "dev.tgz:dev/newstest2013.en"
    assert "veco-wmt14: extracting dev/newstest2013.en from" in capsys.readouterr().err
    with pytest.raises(VecoUserError, match=r"dev/nope not found .*\(not inside .*dev.tgz\)"):
        raw.resolve("dev.tgz", ["dev/nope"])
    with pytest.raises(VecoUserError, match=r"download http://statmt.org/wmt14/test-full.tgz"):
        raw.resolve("test-full.tgz", ["test-full/x.sgm"])


def test_read_sgm_and_eval_set(tmp_path):
    src = _sgm("newstest2013", "en", [(1, "A  first\tline"), (2, "Second &amp; last")])
    ref = _sgm("newstest2013", "de", [(1, "Eine erste Zeile"), (2, "Zweite")])
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "newstest2013-src.en.sgm").write_bytes(src)
    (tmp_path / "dev" / "newstest2013-ref.de.sgm").write_bytes(ref)
    path = str(tmp_path / "dev" / "newstest2013-src.en.sgm")
    assert wmt14.read_sgm(path, "src.sgm") == [
        (("d1", "1"), "A first line"),
        (("d1", "2"), "Second &amp; last"),  # entities are not unescaped (as sacreBLEU)
    ]
    raw = wmt14.RawDir(str(tmp_path))
    es = wmt14.corpora_for("en-de")[1][0]
    assert wmt14.read_eval_set(raw, es, "en", "de") == (
        ["A first line", "Second &amp; last"],
        ["Eine erste Zeile", "Zweite"],
        "sgm",
    )
    (tmp_path / "dev" / "newstest2013-ref.de.sgm").write_bytes(
        _sgm("newstest2013", "de", [(1, "Eine")])
    )
    with pytest.raises(VecoUserError, match="do not list the same documents/segment ids"):
        wmt14.read_eval_set(wmt14.RawDir(str(tmp_path)), es, "en", "de")
    (tmp_path / "plain.sgm").write_text("no segments\n")
    with pytest.raises(VecoUserError, match="no <seg id=..> lines; not a WMT SGML file"):
        wmt14.read_sgm(str(tmp_path / "plain.sgm"), "plain.sgm")


def test_eval_set_falls_back_to_plain_text(tmp_path):
    (tmp_path / "newstest2013.en").write_text("a\nb\n")
    (tmp_path / "newstest2013.de").write_text("A\nB\n")
    es = wmt14.corpora_for("en-de")[1][0]
    raw = wmt14.RawDir(str(tmp_path))
    assert wmt14.read_eval_set(raw, es, "en", "de") == (["a", "b"], ["A", "B"], "plain")


def test_keep_reason_order_and_bounds():
    cfg = wmt14.CleanConfig(min_len=2, max_len=4, ratio=1.5)
    tok = lambda n: ["x"] * n  # noqa: E731
    assert wmt14.keep_reason(tok(0), tok(3), cfg) == "empty"
    assert wmt14.keep_reason(tok(1), tok(1), cfg) == "too_short"
    assert wmt14.keep_reason(tok(5), tok(4), cfg) == "too_long"
    assert wmt14.keep_reason(tok(2), tok(4), cfg) == "ratio"
    assert wmt14.keep_reason(tok(2), tok(3), cfg) is None


def test_missing_archives_accepts_plain_dev_text(tmp_path):
    names = [a for a, _ in wmt14.missing_archives("en-de", str(tmp_path))]
    assert names == [
        "training-parallel-europarl-v7.tgz",
        "training-parallel-commoncrawl.tgz",
        "training-parallel-nc-v9.tgz",
        "dev.tgz",
        "test-full.tgz",
    ]
    (tmp_path / "newstest2013.en").write_text("a\n")
    (tmp_path / "newstest2013.de").write_text("A\n")
    (tmp_path / "test-full.tgz").write_bytes(b"")
    missing = dict(wmt14.missing_archives("en-de", str(tmp_path)))
    assert "dev.tgz" not in missing and "test-full.tgz" not in missing
    assert missing["training-parallel-nc-v9.tgz"].startswith("http://statmt.org/wmt14/")


def test_prepare_without_download_refuses_a_missing_archive_first(tmp_path):
    cfg = wmt14.PrepareConfig(
        pair="en-de",
        raw_dir=str(tmp_path),
        work_dir=str(tmp_path / "work"),
        dest_dir=str(tmp_path / "bin"),
        spm_model=str(tmp_path / "no.model"),
        no_download=True,
    )
    with pytest.raises(VecoUserError) as err:
        wmt14.prepare(cfg)
    assert str(err.value) == (
        f"training-parallel-europarl-v7.tgz is not in {tmp_path} (and --no-download): get "
        "http://statmt.org/wmt13/training-parallel-europarl-v7.tgz"
    )
    assert not (tmp_path / "work").exists()
