"""veco_plugin.prepare on real En/De/Fr/Es gettext text, in-process: the layout, the
counts, the shard ranges, the sentencepiece sample shares, shards byte-identical to
fairseq-preprocess, a failed shard leaving nothing, and every bad input one line."""

import filecmp
import lzma
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers.multilingual_text import gettext_corpora, has_catalogs, make_text
from tests.helpers.shared import built_once
from veco_plugin.cli import prepare_pretraining
from veco_plugin.prepare import pipeline, shards, vocabulary
from veco_plugin.prepare.layout import find_corpora
from veco_plugin.prepare.plan import CorpusPlan, Plan, Settings
from veco_plugin.prepare.reading import corpus_segments

pytestmark = pytest.mark.skipif(not has_catalogs(), reason="needs de/fr/es gettext catalogs")

LINES = 400


@pytest.fixture(scope="session")
def corpora(tmp_path_factory) -> Path:
    return built_once(tmp_path_factory, "gettext-multilingual", gettext_corpora)


@pytest.fixture(scope="module")
def text(corpora, tmp_path_factory) -> Path:
    return make_text(corpora, tmp_path_factory.mktemp("prep") / "text", LINES)


def settings(text, **changes) -> Settings:
    values = dict(
        text=str(text),
        shards=3,
        valid_lines=50,
        vocab_size=500,
        spm_alpha=0.3,
        spm_sample_lines=5000,
        seed=1,
    )
    return Settings(**{**values, **changes})


@pytest.fixture(scope="module")
def data(text, tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("prep") / "data")
    pipeline.prepare(settings(text), out)
    return out


def test_layout_reads_every_kind_of_file(text):
    found = {
        c.where: [tuple(os.path.basename(p) for p in d) for d in c.documents]
        for c in find_corpora(str(text))
    }
    assert found == {
        "mono/de": [("gettext.txt.xz",)],
        "mono/en": [("a.txt",), ("b.txt.gz",)],
        "mono/es": [("gettext.txt.xz",)],
        "mono/fr": [("gettext.txt.xz",)],
        "bi/en-de": [("gettext.en", "gettext.de.gz"), ("part2.en.xz", "part2.de")],
        "bi/en-es": [("gettext.en", "gettext.es.gz")],
        "bi/en-fr": [("gettext.en", "gettext.fr.gz")],
    }


def test_empty_segments_are_dropped_and_counted(data):
    plan = Plan.load(os.path.join(data, "prepare.json"))
    counts = {c.where: c.counts for c in plan.corpora}
    assert counts["mono/en"] == {"read": 2 * LINES + 2, "kept": 2 * LINES, "empty": 2}
    assert counts["mono/de"] == {"read": LINES, "kept": LINES}
    assert counts["bi/en-de"] == {
        "read": LINES + LINES // 2,
        "kept": LINES + LINES // 2 - 2,
        "empty": 2,
    }
    assert counts["bi/en-fr"] == {"read": LINES, "kept": LINES - 2, "empty": 2}


@pytest.mark.parametrize("total,valid,n", [(10, 0, 3), (1000, 50, 7), (101, 100, 1), (57, 5, 52)])
def test_shard_ranges_cut_the_train_split_evenly(total, valid, n):
    c = CorpusPlan("mono", "en", ["en"], [["x"]], [[0]], [total])
    ranges = [c.train_range(k, n, valid) for k in range(n)]
    assert ranges[0][0] == valid and ranges[-1][1] == total
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    sizes = [stop - start for start, stop in ranges]
    assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 1


def test_sample_shares_follow_alpha():
    n = {"en": 9000, "de": 900, "sw": 100}
    for alpha in (0.0, 0.3, 0.7, 1.0):
        r = vocabulary.draws_per_line(n, alpha, cap=4000)
        drawn = {lang: n[lang] * r[lang] for lang in n}
        assert sum(drawn.values()) == pytest.approx(4000)
        p = {lang: k / 10000 for lang, k in n.items()}
        q = {lang: p[lang] ** alpha / sum(v**alpha for v in p.values()) for lang in n}
        assert all(drawn[lang] == pytest.approx(4000 * q[lang]) for lang in n)
    assert vocabulary.draws_per_line(n, 1.0, cap=10**9) == pytest.approx(
        {"en": 1, "de": 1, "sw": 1}
    )


def test_sample_of_a_file_draws_as_expected(text, tmp_path):
    path = str(text / "mono/de/gettext.txt.xz")
    for rate in (0.25, 2.5):
        written = vocabulary.sample_file((path, rate, str(tmp_path / "s.txt"), "1"))
        assert abs(written - rate * LINES) < 4 * (LINES * 0.25) ** 0.5
        with open(tmp_path / "s.txt", encoding="utf-8") as f:
            assert sum(1 for _ in f) == written


def _fairseq_preprocess(args):
    from fairseq import options
    from fairseq_cli.preprocess import main

    main(options.get_preprocessing_parser().parse_args(args))


def _encoded(data, c, start, stop, side, path):
    sp = vocabulary.subwords.load_sentencepiece(os.path.join(data, "spm.model"))
    with open(path, "w", encoding="utf-8") as f:
        for segment in corpus_segments(c.documents, c.kept, start, stop):
            f.write(" ".join(sp.encode(segment[side], out_type=str)) + "\n")


def test_shards_are_what_fairseq_preprocess_writes(data, tmp_path):
    """spm pieces as text -> fairseq-preprocess --srcdict: the same .bin/.idx bytes."""
    plan = Plan.load(os.path.join(data, "prepare.json"))
    s = plan.settings
    by_name = {c.where: c for c in plan.corpora}
    de = by_name["mono/de"]
    start, stop = de.train_range(1, s.shards, s.valid_lines)
    _encoded(data, de, start, stop, 0, tmp_path / "de.txt")
    dictionary = os.path.join(data, "dict.txt")
    _fairseq_preprocess(
        [
            "--only-source",
            "--srcdict",
            dictionary,
            "--trainpref",
            str(tmp_path / "de.txt"),
            "--destdir",
            str(tmp_path / "mono"),
        ]
    )
    fr = by_name["bi/en-fr"]
    for side, lang in enumerate(("en", "fr")):
        _encoded(data, fr, 0, s.valid_lines, side, tmp_path / f"valid.{lang}")
    _fairseq_preprocess(
        [
            "-s",
            "en",
            "-t",
            "fr",
            "--srcdict",
            dictionary,
            "--tgtdict",
            dictionary,
            "--validpref",
            str(tmp_path / "valid"),
            "--destdir",
            str(tmp_path / "bi"),
        ]
    )
    same = [
        (tmp_path / "mono/train", f"{data}/shard1/mono/de/train"),
        (tmp_path / "bi/valid.en-fr.en", f"{data}/shard0/bi/en-fr/valid.en-fr.en"),
        (tmp_path / "bi/valid.en-fr.fr", f"{data}/shard0/bi/en-fr/valid.en-fr.fr"),
    ]
    for ours, theirs in same:
        for ext in (".bin", ".idx"):
            assert filecmp.cmp(f"{ours}{ext}", theirs + ext, shallow=False), theirs + ext
    assert not os.path.exists(f"{data}/shard1/bi/en-fr/valid.en-fr.en.bin")  # shard0 only


def _fresh_copy(data, dst):
    os.makedirs(dst)
    for name in ("prepare.json", "spm.model", "dict.txt"):
        shutil.copyfile(os.path.join(data, name), os.path.join(dst, name))
    return Plan.load(os.path.join(dst, "prepare.json"))


def test_a_failed_shard_leaves_nothing_and_is_rebuilt(data, tmp_path, monkeypatch):
    out = str(tmp_path / "data")
    plan = _fresh_copy(data, out)
    calls = []
    add_items = shards.VecoChunkBuilder.add_items

    def failing(self, ids, sizes):
        calls.append(1)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        add_items(self, ids, sizes)

    monkeypatch.setattr(shards.VecoChunkBuilder, "add_items", failing)
    with pytest.raises(OSError):
        shards.build_shard(plan, out, 2)
    assert sorted(os.listdir(out)) == ["dict.txt", "prepare.json", "spm.model"]
    monkeypatch.setattr(shards.VecoChunkBuilder, "add_items", add_items)
    assert shards.build_shard(plan, out, 2)
    assert not filecmp.dircmp(f"{data}/shard2", f"{out}/shard2").diff_files
    assert sorted(os.listdir(out)) == ["dict.txt", "prepare.json", "shard2", "spm.model"]
    assert not shards.build_shard(plan, out, 2)  # complete: skipped


# ------------------------------------------------------------------ one-line errors


def _error(capsys, argv) -> str:
    with pytest.raises(SystemExit) as exit_:
        prepare_pretraining.cli_main([str(a) for a in argv])
    assert exit_.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert "Traceback" not in "\n".join(err)
    assert err[-1].startswith("veco-prepare-pretraining: error: ")
    return err[-1]


def _small_text(text, dst) -> Path:
    shutil.copytree(text / "mono/de", dst / "mono/de")
    shutil.copytree(text / "bi/en-fr", dst / "bi/en-fr")
    return dst


FLAGS = ["--shards", "2", "--valid-lines", "5", "--vocab-size", "300"]


def test_unequal_pair_names_files_and_counts(text, tmp_path, capsys):
    t = _small_text(text, tmp_path / "t")
    with open(t / "bi/en-fr/gettext.en", "a", encoding="utf-8") as f:
        f.write("One line too many\n")
    line = _error(capsys, ["--text", t, "--out", tmp_path / "d", *FLAGS])
    assert (
        f"{t}/bi/en-fr/gettext.en has {LINES + 1} lines but {t}/bi/en-fr/gettext.fr.gz has {LINES}"
        in line
    )


def test_missing_side_of_a_pair(text, tmp_path, capsys):
    t = _small_text(text, tmp_path / "t")
    shutil.copyfile(t / "bi/en-fr/gettext.en", t / "bi/en-fr/more.en")
    line = _error(capsys, ["--text", t, "--out", tmp_path / "d", *FLAGS])
    assert f"{t}/bi/en-fr/more.en has no translation {t}/bi/en-fr/more.fr[.gz|.xz]" in line


def test_not_utf8_names_file_and_line(text, tmp_path, capsys):
    t = _small_text(text, tmp_path / "t")
    path = t / "mono/de/gettext.txt.xz"
    lines = lzma.decompress(path.read_bytes()).split(b"\n")
    lines[41] = b"Gr\xfc\xdfe"  # Latin-1
    path.write_bytes(lzma.compress(b"\n".join(lines)))
    line = _error(capsys, ["--text", t, "--out", tmp_path / "d", *FLAGS])
    assert f"{path} line 42: not valid UTF-8 (byte 0xfc at column 3)" in line


@pytest.mark.parametrize(
    "flags,expected",
    [
        (
            ["--shards", "2", "--shard", "2"],
            "--shard 2: --shards 2 makes shard0 ... shard1; pass 0 to 1",
        ),
        (["--vocab-size", "100000"], "--vocab-size 100000: the text supports at most"),
        (
            ["--valid-lines", str(LINES)],
            "too few for --valid-lines 400 plus one per shard (--shards 1)",
        ),
        (["--dict", "x"], "--dict needs --spm-model"),
    ],
)
def test_bad_flags(text, tmp_path, capsys, flags, expected):
    t = _small_text(text, tmp_path / "t")
    line = _error(capsys, ["--text", t, "--out", tmp_path / "d", "--valid-lines", "5", *flags])
    assert expected in line


def test_empty_text_and_out_a_file(tmp_path, capsys):
    (tmp_path / "t/mono").mkdir(parents=True)
    line = _error(capsys, ["--text", tmp_path / "t", "--out", tmp_path / "d"])
    assert f"--text {tmp_path}/t holds no text: expected TEXT/mono/<lang>/*.txt" in line
    (tmp_path / "f").write_text("")
    line = _error(capsys, ["--text", tmp_path / "t", "--out", tmp_path / "f"])
    assert f"--out {tmp_path}/f is a file" in line


def test_refused_text_leaves_no_out_behind(text, tmp_path, capsys):
    """A run that stops while reading the text removes the --out it made (not one that
    was there)."""
    _error(capsys, ["--text", tmp_path / "missing", "--out", tmp_path / "d"])
    assert not (tmp_path / "d").exists()
    _error(
        capsys,
        [
            "--text",
            _small_text(text, tmp_path / "t"),
            "--out",
            tmp_path / "d",
            "--valid-lines",
            str(LINES),
        ],
    )
    assert not (tmp_path / "d").exists()
    (tmp_path / "kept").mkdir()
    _error(capsys, ["--text", tmp_path / "missing", "--out", tmp_path / "kept"])
    assert (tmp_path / "kept").is_dir()


def test_other_settings_are_refused_on_rerun(text, data, capsys):
    line = _error(
        capsys,
        [
            "--text",
            text,
            "--out",
            data,
            "--shards",
            "4",
            "--valid-lines",
            "50",
            "--vocab-size",
            "500",
            "--spm-sample-lines",
            "5000",
        ],
    )
    assert "prepare.json was prepared with --shards 3 (now 4)" in line


def test_out_made_by_another_tool_is_refused(text, tmp_path, capsys):
    t = _small_text(text, tmp_path / "t")
    (tmp_path / "d/shard0/mono").mkdir(parents=True)
    line = _error(capsys, ["--text", t, "--out", tmp_path / "d", *FLAGS])
    assert f"--out {tmp_path}/d holds shard0 but no prepare.json" in line


def test_cut_short_archive_is_one_line(text, tmp_path, capsys):
    t = _small_text(text, tmp_path / "t")
    path = t / "mono/de/gettext.txt.xz"
    path.write_bytes(path.read_bytes()[:-100])
    line = _error(capsys, ["--text", t, "--out", tmp_path / "d", *FLAGS])
    assert f"{path}: cannot be read to the end (" in line


def test_given_model_and_dictionary_in_another_order(data, text, tmp_path):
    """--spm-model M --dict D (XLM-R's pair: D is not in M's id order): the ids are
    still those fairseq-preprocess --srcdict D gives the pieces."""
    with open(os.path.join(data, "dict.txt"), encoding="utf-8") as f:
        entries = f.read().splitlines()
    reordered = tmp_path / "dict.txt"
    reordered.write_text("\n".join(entries[1::2] + entries[::2]) + "\n", encoding="utf-8")
    out = str(tmp_path / "data")
    model = os.path.join(data, "spm.model")
    pipeline.prepare(settings(text, spm_model=model, dict=str(reordered)), out, shard=1)
    assert sorted(os.listdir(out)) == [
        ".prepare.lock",
        "dict.txt",
        "prepare.json",
        "shard1",
        "spm.model",
    ]
    assert filecmp.cmp(out + "/dict.txt", reordered, shallow=False)
    plan = Plan.load(os.path.join(out, "prepare.json"))
    es = {c.where: c for c in plan.corpora}["bi/en-es"]
    start, stop = es.train_range(1, 3, 50)
    _encoded(data, es, start, stop, 1, tmp_path / "train.es")
    _encoded(data, es, start, stop, 0, tmp_path / "train.en")
    _fairseq_preprocess(
        [
            "-s",
            "en",
            "-t",
            "es",
            "--srcdict",
            str(reordered),
            "--tgtdict",
            str(reordered),
            "--trainpref",
            str(tmp_path / "train"),
            "--destdir",
            str(tmp_path / "bi"),
        ]
    )
    for lang in ("en", "es"):
        for ext in (".bin", ".idx"):
            name = f"train.en-es.{lang}{ext}"
            assert filecmp.cmp(
                tmp_path / "bi" / name, f"{out}/shard1/bi/en-es/{name}", shallow=False
            )
