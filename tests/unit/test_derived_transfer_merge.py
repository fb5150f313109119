"""``veco-derived-transfer --merge RUN ...``: rows measured in separate runs on one text
become one table, plot and ρ; runs that differ in text, dictionary, vocabulary or settings,
or that measured one model twice, are refused in one line."""

import json
import shutil

import pytest

from tests.helpers.refusals import ran, refused
from veco_plugin.cli import derived_transfer as cli
from veco_plugin.derived_transfer import report
from veco_plugin.derived_transfer.merge import SHARED_FILES

PROG = "veco-derived-transfer"
SETTINGS = {"settings": {"updates": 2500, "seed": 1}}
NOTES = ("POS: seqeval F1", "POS fine-tuning: lr 0.0005")


def _cell(transform, objective, sup, zs, alignment):
    return report.Cell(transform, objective, objective.upper(), sup, zs, alignment,
                       sup_accuracy=sup + 1, zs_accuracy=zs + 1)  # fmt: skip


def _run(folder, cells, settings=SETTINGS, text="a b c\n"):
    """A finished run as the command leaves it: its shared inputs and results.json."""
    for name in SHARED_FILES:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text if name == "corpus/text.txt" else name, "utf-8")
    report.write(str(folder), cells, settings, NOTES)
    return folder


SYN = [_cell("trans", "mlm", 78.3, 30.8, 0.006), _cell("trans", "align_mlm", 78.5, 42.8, 0.255),
       _cell("trans_syn", "mlm", 77.9, 27.7, 0.004),
       _cell("trans_syn", "align_mlm", 77.6, 39.3, 0.254)]  # fmt: skip
INV = [
    _cell("trans_inv", "mlm", 78.1, 21.6, 0.002),
    _cell("trans_inv", "align_mlm", 78.1, 39.0, 0.3),
]


def test_two_runs_become_one_table_in_the_commands_row_order(tmp_path, capsys):
    a, b = _run(tmp_path / "syn", SYN), _run(tmp_path / "inv", INV)
    (tmp_path / "syn" / "spm.model").write_text("records its input path: may differ")
    out = ran(cli, ["--out", tmp_path / "all", "--merge", a, "--merge", b], capsys).stdout
    merged = json.loads((tmp_path / "all" / "results.json").read_text())
    order = [(m["transform"], m["objective"]) for m in merged["models"]]
    assert order == [("trans", "mlm"), ("trans", "align_mlm"), ("trans_inv", "mlm"),
                     ("trans_inv", "align_mlm"), ("trans_syn", "mlm"),
                     ("trans_syn", "align_mlm")]  # fmt: skip
    cells = SYN[:2] + INV + SYN[2:]
    assert merged["spearman_alignment_delta"] == pytest.approx(report.correlation(cells))
    assert merged["models"][2]["delta"] == pytest.approx(78.1 - 21.6)
    assert merged["settings"] == SETTINGS["settings"] and merged["notes"] == list(NOTES)
    assert merged["merged_from"] == [str(a), str(b)]
    row = "| MLM | 78.3 / 30.8 / 47.5 | 47.5 | 78.1 / 21.6 / 56.5 | 56.5 | 77.9 / 27.7 / 50.2 |"
    assert row in out  # a row an objective, a column group a transformation
    assert "T_trans∘T_inv: SUP / ZS / Δ (F1)" in out and "over 6 models" in out
    assert (tmp_path / "all" / "results.png").stat().st_size > 1000


def _differing_text(tmp_path):
    return [_run(tmp_path / "syn", SYN), _run(tmp_path / "inv", INV, text="other\n")]


def _differing_settings(tmp_path):
    other = {"settings": {"updates": 1000, "seed": 1}}
    return [_run(tmp_path / "syn", SYN), _run(tmp_path / "inv", INV, settings=other)]


def _twice(tmp_path):
    return [_run(tmp_path / "syn", SYN), _run(tmp_path / "inv", INV + SYN[:1])]


def _cut(tmp_path):
    runs = [_run(tmp_path / "syn", SYN), _run(tmp_path / "inv", INV)]
    (runs[1] / "results.json").write_text('{"models": [')
    return runs


def _another_tools(tmp_path):
    runs = [_run(tmp_path / "syn", SYN), _run(tmp_path / "inv", INV)]
    (runs[1] / "results.json").write_text('{"rows": {"cold": {}}}')
    return runs


def _unfinished(tmp_path):
    runs = [_run(tmp_path / "syn", SYN), _run(tmp_path / "inv", INV)]
    (runs[1] / "results.json").unlink()
    return runs


@pytest.mark.parametrize(
    "make, words",
    [
        (_differing_text, "their corpus/text.txt differ: rows compare only when measured on one"),
        (_differing_settings, "their settings differ in results.json"),
        (_twice, "mlm on trans is in both"),
        (_cut, "results.json is not JSON"),
        (_another_tools, "results.json has no models: give the --out of a veco-derived-transfer"),
        (_unfinished, "no results.json: give the --out of a finished veco-derived-transfer run"),
    ],
)
def test_runs_that_do_not_compare_are_refused(tmp_path, capsys, make, words):
    args = ["--out", tmp_path / "all"]
    for run in make(tmp_path):
        args += ["--merge", run]
    assert words in refused(cli, args, PROG, capsys)
    assert not (tmp_path / "all").exists()


def test_merge_flags_are_checked_before_any_read(tmp_path, capsys):
    a, b = _run(tmp_path / "syn", SYN), _run(tmp_path / "inv", INV)
    line = refused(cli, ["--out", tmp_path / "m", "--merge", a, "--merge", b, "--text", a], PROG,
                   capsys)  # fmt: skip
    assert "--merge reads finished runs: leave out --text" in line
    assert "give two or more" in refused(cli, ["--out", tmp_path / "m", "--merge", a], PROG, capsys)
    line = refused(cli, ["--out", a, "--merge", a, "--merge", b], PROG, capsys)
    assert "is one of the merged runs" in line
    line = refused(cli, ["--out", tmp_path / "m", "--merge", a, "--merge", a], PROG, capsys)
    assert f"--merge {a} is given twice" in line
    shutil.rmtree(b)
    line = refused(cli, ["--out", tmp_path / "m", "--merge", a, "--merge", b], PROG, capsys)
    assert "no such directory" in line
