"""veco_plugin.corpora.text: strict UTF-8 reading, atomic writes, counted cleaning."""

import gzip

import pytest

from veco_plugin.corpora import text
from veco_plugin.errors import VecoUserError


def test_normalize_collapses_every_whitespace_run():
    assert text.normalize(" a\tb\r c\u2028d  \n") == "a b c d"


def test_read_lines_splits_on_newline_only_and_reads_gzip(tmp_path):
    plain, gz = tmp_path / "a.txt", tmp_path / "a.txt.gz"
    data = "one\rstill one\n  two \u2028 x\nlast".encode("utf-8")
    plain.write_bytes(data)
    with gzip.open(gz, "wb") as f:
        f.write(data)
    expected = ["one still one", "two x", "last"]
    assert list(text.read_lines(str(plain))) == expected
    assert list(text.read_lines(str(gz))) == expected
    assert list(text.read_lines(str(plain), keep_raw=True))[1] == "  two \u2028 x"


def test_bad_utf8_names_file_line_byte_and_fix(tmp_path):
    path = tmp_path / "latin1.de"
    path.write_bytes(b"gut\nGr\xfc\xdfe\n")
    lines = list(text.read_lines(str(path), shown="shown.de"))
    assert lines[0] == "gut" and isinstance(lines[1], text.BadLine)
    assert lines[1].message() == (
        "shown.de line 2: not valid UTF-8 (byte 0xfc at column 3); fix or remove that line"
    )
    with pytest.raises(VecoUserError, match=r"latin1.de line 2: .*; do this"):
        text.read_lines_strict(str(path), fix="do this")
    with pytest.raises(VecoUserError, match=r"line 2: .*\(and its translation\)"):
        text.check_parallel_text([(str(path), str(path))])


def test_check_parallel_text_counts_and_compares(tmp_path):
    a, b, mono = tmp_path / "a.en", tmp_path / "b.de", tmp_path / "mono.en"
    a.write_text("1\n2\n3\n")
    b.write_text("1\n2\n")
    mono.write_text("x\n")
    with pytest.raises(VecoUserError) as err:
        text.check_parallel_text([(str(a), str(b))])
    assert str(err.value) == (
        f"{a} has 3 lines but {b} has 2: the sides of a parallel corpus must match line by line"
    )
    b.write_text("1\n2\n3")  # no final newline: still 3 lines
    counts = text.check_parallel_text([(str(a), str(b))], [str(mono)])
    assert counts == {str(a): 3, str(b): 3, str(mono): 1}


def test_read_parallel_drops_or_refuses_bad_lines(tmp_path):
    a, b = tmp_path / "c.en", tmp_path / "c.de"
    a.write_bytes(b"a\nb\nc\n")
    b.write_bytes(b"A\n\xff\nC\n")
    counts = text.DropCounts()
    pairs = list(text.read_parallel(str(a), str(b), "c.en", "c.de", counts, drop_bad_utf8=True))
    assert pairs == [("a", "A"), ("c", "C")] and counts.dropped == {"bad_utf8": 1}
    with pytest.raises(VecoUserError, match="c.de line 2: not valid UTF-8"):
        list(text.read_parallel(str(a), str(b), "c.en", "c.de", text.DropCounts()))
    b.write_bytes(b"A\nB\nC\nD\n")
    with pytest.raises(VecoUserError, match=r"c.en has 3 lines but c.de has 4: .*stray \\r"):
        list(text.read_parallel(str(a), str(b), "c.en", "c.de", text.DropCounts()))


def test_write_lines_is_atomic(tmp_path):
    path = tmp_path / "out.txt"
    text.write_lines(str(path), ["a", "b"])
    assert path.read_bytes() == b"a\nb\n"

    def failing():
        yield "c"
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        text.write_lines(str(path), failing())
    assert path.read_bytes() == b"a\nb\n"  # the old file is untouched
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]  # no .part left


def test_chunks():
    assert list(text.chunks(range(5), 2)) == [[0, 1], [2, 3], [4]]
    assert list(text.chunks([], 3)) == []


def test_drop_counts_keep_or_count_the_reason():
    counts = text.DropCounts()
    counts.read = 5
    decisions = [counts.keep(r) for r in (None, "ratio", None, "empty", "ratio")]
    assert decisions == [True, False, True, False, False]
    assert counts.as_dict() == {"read": 5, "kept": 2, "ratio": 2, "empty": 1}
    assert counts.summary() == "kept 2 of 5 pairs (dropped: empty 1, ratio 2)"
    total = text.DropCounts()
    total.update(counts)
    total.update(counts)
    assert total.as_dict() == {"read": 10, "kept": 4, "ratio": 4, "empty": 2}
    assert text.DropCounts().summary() == "kept 0 of 0 pairs"


def test_ratio_exceeds():
    assert not text.ratio_exceeds(2, 3, 1.5)
    assert text.ratio_exceeds(2, 4, 1.5) and text.ratio_exceeds(4, 2, 1.5)


@pytest.mark.parametrize("name", ["missing.txt", "missing.txt.gz"])
def test_missing_input_is_a_user_error_naming_it(tmp_path, name):
    with pytest.raises(VecoUserError, match=f"{name}: no such file"):
        text.read_lines_strict(str(tmp_path / name))
