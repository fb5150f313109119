"""The quickstart report on a hand-made run directory: labels, criteria and notes from the
table of objectives, JSON stamps, the alignment section, one-line errors."""

import json

import pytest

from veco_plugin.objectives import OBJECTIVES, objective
from veco_plugin.pipeline.runner import write_stamp
from veco_plugin.quickstart import report
from veco_plugin.quickstart.stages import RANDOM_LABEL

SOURCES = ["one two three four five", "six seven eight nine ten", "a b c d e"]


def _record(tag, **values):
    return f"2024-01-01 | INFO | {tag} | {tag} | " + json.dumps(
        {f"{tag}_{k}" if tag != "train_inner" else k: v for k, v in values.items()}
    )


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _run_dir(tmp_path, inits, align=True):
    run = tmp_path / "run"
    (run / "stamps").mkdir(parents=True)
    _write(run / "nmt-bin" / "test.raw.en", "\n".join(SOURCES) + "\n")
    _write(run / "nmt-bin" / "test.raw.de", "\n".join(s.upper() for s in SOURCES) + "\n")
    for i, init in enumerate(inits):
        curve = [_record("valid", loss=6.0 - u / 100, bleu=u / 10, num_updates=u) for u in (10, 20)]
        _write(run / "logs" / f"finetune-{init}.log", "\n".join(curve) + "\n")
        scores = {
            "sentences": 3,
            "sacrebleu": {"score": 10.0 + i, "signature": "nrefs:1|case:mixed", "text": "x"},
            "tokenized_bleu": {"score": 11.0 + i, "signature": "nrefs:1|tok:none"},
            "hypotheses": 3,
        }
        _write(run / "eval" / init / "scores.json", json.dumps(scores))
        _write(run / "eval" / init / "test.hyp.de", "h1\nh2\nh3\n")
        write_stamp(str(run / "stamps" / f"finetune-{init}.done"), ["fairseq-train"], 60.0)
        if init != "random":
            _write(
                run / "logs" / f"pretrain-{init}.log", _record("valid", loss=9.5, num_updates=20)
            )
            write_stamp(str(run / "stamps" / f"pretrain-{init}.done"), ["fairseq-train"], 120.0)
    if align:
        row = next(r for r in OBJECTIVES if r.aligns)
        for lang, lines in (("en", SOURCES), ("de", [s.upper() for s in SOURCES])):
            _write(run / "align" / f"test.{lang}", "\n".join(lines) + "\n")
        for model in (row.starts_from, row.run):
            _write(run / "align" / f"{model}.align", "0-0 1-1\n0-0\n2-2\n")
        c = row.criterion
        train = _record("train", num_updates=5, **{f"{c}_label_share": 80.0, f"bi_{c}_acc": 9.0})
        _write(run / "logs" / f"pretrain-{row.run}.log", train + "\n")
    return run


def _main(run, inits, *extra):
    argv = ["--run-dir", str(run), "--inits", ",".join(inits), "--examples", "2"]
    return report.main(argv + ["--align-dir", str(run / "align"), *extra])


def test_labels_criteria_notes_and_alignment_from_the_table(tmp_path):
    inits = [r.run for r in OBJECTIVES if r.translate] + ["random"]
    run = _run_dir(tmp_path, inits)
    assert _main(run, inits) == 0
    summary = json.loads((run / "results.json").read_text(encoding="utf-8"))
    assert list(summary["results"]) == inits
    for init, r in summary["results"].items():
        if init == "random":
            assert r["label"] == RANDOM_LABEL and r["pretraining"] is None
        else:
            assert r["label"] == objective(init).label
            assert r["pretraining"]["criterion"] == objective(init).criterion
            assert r["pretraining"]["seconds"] == 120.0
    assert summary["notes"] == [f"{r.label} row: {r.note}" for r in OBJECTIVES if r.note]
    assert summary["stage_seconds"]["finetune-random"] == 60.0
    assert summary["wall_seconds"] is not None
    table = (run / "results.md").read_text(encoding="utf-8")
    for r in summary["results"].values():
        assert f"| {r['label']} | " in table
    row = next(r for r in OBJECTIVES if r.aligns)
    a = summary["alignment"]
    assert (a["before"], a["after"], a[f"{row.run}_updates"]) == (row.starts_from, row.run, 5)
    assert a["label_share"] == 80.0 and a["pairs"] == 3
    assert a["examples"][0]["links"][row.run] == ["one–ONE", "two–TWO"]
    before = objective(row.starts_from).criterion
    assert f"aligned with the {before} checkpoint (before) and after 5 `{row.criterion}`" in table
    assert f"  - {row.criterion}: one–ONE, two–TWO" in table
    assert (run / "learning_curve.png").read_bytes()[:4] == b"\x89PNG"


def test_the_alignment_score_of_pre_training_goes_under_the_table(tmp_path):
    inits = ["veco", "alignmlm", "random"]
    run = _run_dir(tmp_path, inits, align=False)
    log = _record("valid", loss=9.0, num_updates=20, align_score=12.5, align_cos=0.4)
    _write(run / "logs" / "pretrain-alignmlm.log", log + "\n")
    assert _main(run, inits) == 0
    summary = json.loads((run / "results.json").read_text(encoding="utf-8"))
    assert summary["results"]["alignmlm"]["pretraining"]["align_score"] == 12.5
    assert "align_score" not in summary["results"]["veco"]["pretraining"]
    label = objective("alignmlm").label
    table = (run / "results.md").read_text(encoding="utf-8")
    assert (
        "Alignment score of the pre-trained input embeddings (last pre-training validation; "
        "share of held-out word-list source words whose nearest target word by cosine is a "
        f"translation): {label} 12.50%.\n"
    ) in table
    assert summary["notes"] == [f"{label} row: {objective('alignmlm').note}"]
    # no row logged a score: no line
    run = _run_dir(tmp_path / "plain", ["veco", "random"], align=False)
    assert _main(run, ["veco", "random"]) == 0
    assert "Alignment score" not in (run / "results.md").read_text(encoding="utf-8")


def test_without_the_alignment_stages_and_without_a_row(tmp_path):
    run = _run_dir(tmp_path, ["veco", "random"], align=False)
    assert _main(run, ["veco", "random"]) == 0
    summary = json.loads((run / "results.json").read_text(encoding="utf-8"))
    assert summary["alignment"] is None and summary["notes"] == []
    assert "## Word alignment" not in (run / "results.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "inits, message",
    [
        (
            ["veco", "nope"],
            "--inits: unknown init 'nope' (veco, xlm, alignmlm, weam, dictmlm, random)",
        ),
        (["veco", "xlm"], "logs/finetune-xlm.log not found: did the stage run?"),
    ],
)
def test_bad_input_is_one_line(tmp_path, capsys, inits, message):
    run = _run_dir(tmp_path, ["veco"], align=False)
    assert _main(run, inits) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
