"""``veco-spm binarize`` (the binarizing half of scripts/prepare-pretraining-data.sh)
writes what fairseq-preprocess --srcdict writes, byte for byte: pieces fairseq splits
oddly (tabs, runs of spaces, no-break and other Unicode spaces), pieces missing from the
dictionary, empty lines, Windows line ends, word alignments with empty lines; a bad
alignment line is one line naming file and line, and leaves no dataset behind."""

import filecmp
import os

import pytest

from tests.helpers.refusals import ran, refused
from veco_plugin.cli import spm

PIECES = ["▁the", "▁cat", "▁Katze", "s", "▁die", "▁sat", ",", "."]
EN = ["▁the ▁cat ▁sat .", "", "▁the\t▁cat  s", "▁not-in-dict ▁cat", "\u00a0▁the\u2003▁sat\r"]
DE = ["▁die ▁Katze ,", "▁die", "", "▁die ▁Katze s", "▁Katze\u3000."]
ALIGN = ["0-0 1-1 3-2", "", "0-0 1-1 2-2", "1-1", "0-0 1-1"]


def _write(path, lines, newline="\n"):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("".join(line + newline for line in lines))


@pytest.fixture
def text(tmp_path):
    folder = tmp_path / "text"
    folder.mkdir()
    _write(tmp_path / "dict.txt", [f"{piece} 1" for piece in PIECES])
    for lang, lines in (("en", EN), ("de", DE)):
        _write(folder / f"mono.spm.{lang}", lines * 3)
        _write(folder / f"train.spm.{lang}", lines)
        _write(folder / f"valid.spm.{lang}", lines[::-1], newline="\r\n")
    _write(folder / "train.spm.align", ALIGN)
    _write(folder / "valid.spm.align", ALIGN[::-1])
    return tmp_path


def _fairseq_preprocess(*args):
    from fairseq import options
    from fairseq_cli.preprocess import main

    main(options.get_preprocessing_parser().parse_args([str(a) for a in args]))


def _fairseq(root):
    """The script's three former fairseq-preprocess calls."""
    text, srcdict = root / "text", root / "dict.txt"
    for lang in ("en", "de"):
        _fairseq_preprocess(
            "--only-source", "--srcdict", srcdict, "--trainpref", text / f"mono.spm.{lang}",
            "--validpref", text / f"valid.spm.{lang}", "--destdir", root / "fairseq/mono" / lang,
        )  # fmt: skip
    _fairseq_preprocess(
        "-s", "en", "-t", "de", "--srcdict", srcdict, "--tgtdict", srcdict,
        "--trainpref", text / "train.spm", "--validpref", text / "valid.spm",
        "--destdir", root / "fairseq/bi/en-de", "--align-suffix", "align",
    )  # fmt: skip


def _binarize(root, *extra):
    args = ["binarize", "--dict", root / "dict.txt", "--text", root / "text"]
    return args + ["--destdir", root / "ours", "--mono", "en", "--mono", "de", *extra]


def test_the_files_are_fairseq_preprocess_s_byte_for_byte(text, capsys):
    _fairseq(text)
    ran(spm, _binarize(text, "--bi", "en", "de", "--align-suffix", "align"), capsys)
    theirs, ours = text / "fairseq", text / "ours"
    compared = 0
    for folder, _, names in os.walk(theirs):
        for name in names:
            if name == "preprocess.log":  # fairseq's log of its run
                continue
            mine = ours / os.path.relpath(folder, theirs) / name
            assert filecmp.cmp(os.path.join(folder, name), mine, shallow=False), mine
            compared += 1
    # mono: 2 languages x (2 splits x .bin/.idx + dict); bi: 2 splits x 3 datasets x 2 + 2 dicts
    assert compared == 2 * 5 + 14
    assert sorted(p.name for p in (ours / "bi/en-de").iterdir()) == sorted(
        p.name for p in (theirs / "bi/en-de").iterdir() if p.name != "preprocess.log"
    )
    assert not list(ours.rglob("*.partial"))


def test_a_bad_alignment_line_is_one_line_and_leaves_no_dataset(text, capsys):
    _write(text / "text/valid.spm.align", ["0-0", "0-1 2", "", "", ""])
    ran(spm, _binarize(text), capsys)  # the monolingual datasets, made first
    args = _binarize(text, "--bi", "en", "de", "--align-suffix", "align")
    line = refused(spm, args, "veco-spm", capsys)
    assert f"{text}/text/valid.spm.align, line 2: '0-1 2' is not a Pharaoh line" in line
    assert not (text / "ours/bi/en-de").exists() and (text / "ours/mono/de/train.bin").exists()
    assert not list((text / "ours").rglob("*.partial"))


def test_a_missing_input_is_named_before_any_output(text, capsys):
    os.remove(text / "text/valid.spm.de")
    line = refused(spm, _binarize(text), "veco-spm", capsys)
    assert line.endswith(f"--text {text}/text/valid.spm.de: no such file")
    assert not (text / "ours").exists()


def test_a_destdir_that_is_a_file_and_an_empty_dict_are_one_line(text, capsys):
    (text / "ours").write_text("a file")
    line = refused(spm, _binarize(text), "veco-spm", capsys)
    assert line.endswith(f"--destdir {text}/ours is a file, not a directory: give a directory "
                         "(new or empty)")  # fmt: skip
    (text / "ours").unlink()
    (text / "dict.txt").write_text("")
    line = refused(spm, _binarize(text), "veco-spm", capsys)
    assert line.endswith(f"--dict {text}/dict.txt holds no piece: give the pieces' dict.txt")
    assert not (text / "ours").exists()
