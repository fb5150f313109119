"""``veco-derive-language`` as installed: real English (gettext msgids, UD English excerpts)
-> every derived language, read back by fairseq-preprocess and veco-prepare-tagging; bad
input is one line naming the file and line."""

import glob
from pathlib import Path

import pytest
from fairseq.data import Dictionary, data_utils

from tests.helpers.runner import run
from veco_plugin.cli import derive_language
from veco_plugin.corpora import derived as d
from veco_plugin.corpora.gettext import read_catalog
from veco_plugin.corpora.subwords import load_sentencepiece, train_sentencepiece, write_dictionary
from veco_plugin.corpora.tagging import read_tagged

PROG = "veco-derive-language"
FIX = "tests/fixtures/udpos"
CONLLU, TSV = f"{FIX}/en_ewt-ud-dev.excerpt.conllu", f"{FIX}/dev-en.excerpt.tsv"
CATALOGS = sorted(glob.glob("/usr/share/locale/de/LC_MESSAGES/*.mo"))[:12]
pytestmark = pytest.mark.skipif(not CATALOGS, reason="no /usr/share/locale/de/*.mo here")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("derive")
    lines = [" ".join(m.split()) for p in CATALOGS for m, _ in read_catalog(Path(p))]
    text = tmp / "mono.en"
    text.write_text("\n".join([x for x in lines if x][:1500]) + "\n", encoding="utf-8")
    words = [w for s in read_tagged([CONLLU, TSV]) for w in s.words]
    (tmp / "spm.txt").write_text(text.read_text() + "\n".join(words) + "\n", encoding="utf-8")
    model = train_sentencepiece([str(tmp / "spm.txt")], str(tmp / "spm"), 400)
    write_dictionary(model, str(tmp / "dict.txt"))
    return {"spm": model, "dict": str(tmp / "dict.txt"), "text": str(text), "tmp": tmp}


@pytest.fixture(scope="module")
def derived(inputs):
    out = inputs["tmp"] / "out"
    args = ["--spm-model", inputs["spm"], "--dict", inputs["dict"], "--output", out]
    run(PROG, args + ["--text", inputs["text"], "--tagged", CONLLU, "--tagged", TSV])
    return out


def test_every_transformation_of_text_and_tags_is_written(inputs, derived):
    sp = load_sentencepiece(inputs["spm"])
    text = Path(inputs["text"]).read_text(encoding="utf-8").splitlines()
    english = (derived / "en" / "mono.en").read_text(encoding="utf-8").splitlines()
    assert english == [" ".join(sp.encode(x, out_type=str)) for x in text]
    for transform in d.DEFAULT_TRANSFORMS:
        invert, copy = d.TRANSFORMS[transform][0] == d.INV, d.TRANSFORMS[transform][1]
        lines = (derived / transform / "mono.en").read_text(encoding="utf-8").splitlines()
        assert len(lines) == len(text)
        for line, source in zip(lines, text):
            moved = d.invert_words(source.split()) if invert else source.split()
            pieces = d.untransliterate(line.split()) if copy else line.split()
            assert pieces == sp.encode(" ".join(moved), out_type=str)
        for name, source in (("en_ewt-ud-dev.excerpt.tsv", CONLLU), ("dev-en.excerpt.tsv", TSV)):
            ours, theirs = read_tagged([str(derived / transform / name)]), read_tagged([source])
            assert [s.tags for s in ours] == [
                (d.invert_tagged(s) if invert else s).tags for s in theirs
            ]
            assert [s.words for s in read_tagged([str(derived / "en" / name)])] == [
                s.words for s in theirs
            ]


def test_dictionaries_cover_the_stated_share_of_the_tokens(inputs, derived):
    english = Dictionary.load(inputs["dict"])
    joint = Dictionary.load(str(derived / "dict.txt"))
    types = len(english) - english.nspecial
    assert len(joint) - joint.nspecial == 2 * types
    pairs = [x.split() for x in (derived / "bilingual.txt").read_text().splitlines()]
    assert len(pairs) == round(0.25 * types)
    assert all(t == d.MARKER + s and english.index(s) != english.unk() for s, t in pairs)


def test_derived_text_survives_fairseq_preprocess_with_the_joint_dictionary(derived, tmp_path):
    for side in ("en", "trans_inv"):
        proc = run(
            "fairseq-preprocess",
            ["--only-source", "--srcdict", derived / "dict.txt", "--workers", "1"]
            + ["--trainpref", derived / side / "mono.en", "--destdir", tmp_path / side],
        )
        assert "tokens, 0.0% replaced" in proc.stdout + proc.stderr
    joint = Dictionary.load(str(derived / "dict.txt"))
    en = data_utils.load_indexed_dataset(str(tmp_path / "en" / "train"), joint)
    inv = data_utils.load_indexed_dataset(str(tmp_path / "trans_inv" / "train"), joint)
    assert len(en) == len(inv) > 1000
    for i in range(len(en)):  # the same pieces (T_inv moves words), copied, none <unk>
        ours = [joint[t] for t in inv[i].tolist()[:-1]]
        assert all(d.is_copy(p) for p in ours)
        assert sorted(d.untransliterate(ours)) == sorted(joint[t] for t in en[i].tolist()[:-1])


def test_prepare_tagging_reads_a_derived_word_as_its_copies(inputs, derived, tmp_path):
    name = "dev-en.excerpt.tsv"
    for side in ("en", "trans"):
        flags = ["--spm-model", inputs["spm"], "--dict", derived / "dict.txt"]
        split = f"train={derived / side / name}"
        run("veco-prepare-tagging", flags + ["--split", split, "--output", tmp_path / side])
    joint = Dictionary.load(str(derived / "dict.txt"))
    for key in ("input0", "label"):
        en = data_utils.load_indexed_dataset(str(tmp_path / "en" / key / "train"), None)
        tr = data_utils.load_indexed_dataset(str(tmp_path / "trans" / key / "train"), None)
        assert len(en) == len(tr)
        for a, b in zip(en, tr):
            if key == "label":
                assert a.tolist() == b.tolist()
            else:
                assert [d.copy_piece(joint[t]) for t in a.tolist()[1:-1]] == [
                    joint[t] for t in b.tolist()[1:-1]
                ]


def _refused(args, expected, capsys=None):
    """The one line ``args`` end on: through the installed console script, or with
    ``capsys`` through its entry point in this process (no start-up of torch each time)."""
    if capsys is None:
        proc = run(PROG, args, check=False)
        assert proc.returncode == 1, proc.stderr[-2000:]
        assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
        stderr = proc.stderr
    else:
        capsys.readouterr()
        with pytest.raises(SystemExit) as stop:
            derive_language.cli_main([str(arg) for arg in args])
        assert stop.value.code == 1
        stderr = capsys.readouterr().err
    lines = [x for x in stderr.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"{PROG}: error: "), stderr[-2000:]
    assert expected in lines[0], lines[0]
    return lines[0]


def test_bad_input_is_one_line_naming_the_file_line_and_fix(inputs, tmp_path, capsys):
    base = ["--spm-model", inputs["spm"], "--output", tmp_path / "out"]
    empty = tmp_path / "empty-line.txt"
    empty.write_text("a first sentence .\n\nthe third\n", encoding="utf-8")
    line = _refused(base + ["--text", empty], f"{empty}:2: a sentence without words")
    assert "remove the empty lines" in line
    marked = tmp_path / "marked.tsv"
    marked.write_text("fine\tADJ\n\ue000▁x\tNOUN\n\n", encoding="utf-8")
    word = f"{marked}:1: word 2 ({chr(0xE000) + '▁x'!r}) holds"
    _refused(base + ["--tagged", marked], word, capsys)
    unknown = tmp_path / "dict.txt"
    unknown.write_text(Path(inputs["dict"]).read_text() + "▁zzqx 4\n", encoding="utf-8")
    n = len(unknown.read_text().splitlines())
    piece = f"{unknown}:{n}: token '▁zzqx' is not a piece"
    line = _refused(base + ["--dict", unknown], piece, capsys)
    assert "give the English dict.txt" in line
    _refused(base + ["--transforms", "trans,perm"], "unknown transformation 'perm'", capsys)
    _refused(base + ["--transforms", "trans,syn"], "give --syn-treebank FILE.conllu", capsys)
    _refused(base + ["--dictionary-coverage", "1.5"], "give a fraction in (0, 1]", capsys)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    _refused(base[:-1] + [tmp_path / "full"], "is not empty", capsys)
    assert not (tmp_path / "out").exists()
