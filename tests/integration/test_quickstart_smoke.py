"""``scripts/quickstart.sh --smoke`` (``python -m veco_plugin.quickstart``) end to end, then
re-runs that must not redo anything.

The smoke preset is the real pipeline at toy size: the gettext corpus (first 2,000 train
pairs, about 40 valid/test pairs from held-out catalogs; the project's fixture text when the
machine has no German catalogs), a 1,000-piece sentencepiece model, 20 updates of ca_mlm and
of tlm pre-training, veco-init-nmt, 20 fine-tuning updates from each of veco / random / xlm
(valid loss + greedy valid BLEU every 10), averaging the 2 checkpoints, beam 5 over every
test sentence, BLEU, 5 dwa updates from the ca_mlm checkpoint, veco-align on 10 test pairs
before and after, and the report. The first run takes 1.5-3 minutes on 2 cores.
Which runs, labels and criteria to expect comes from the table of objectives.
"""

import json
import math
import os
import re
import shutil
import subprocess
import time

import pytest

from tests.helpers.runner import REPO, env
from veco_plugin.objectives import OBJECTIVES, objective
from veco_plugin.pipeline.warm import BROKER_ENV
from veco_plugin.quickstart import __main__ as quickstart
from veco_plugin.quickstart.stages import RANDOM, labels

SCRIPT = os.path.join(REPO, "scripts", "quickstart.sh")
FIXTURE_TEXT = os.path.join(REPO, "tests", "fixtures", "text")
# ALIGN-MLM's and WEAM's rows are switched off here (their runs, word list and eflomal
# alignments would add ~3 minutes); tests/integration/test_{align_mlm,weam}_training.py
# train them, tests/unit/test_quickstart_stages.py checks their commands
SKIPPED = ("alignmlm", "weam")
RUNS = [row for row in OBJECTIVES if row.run not in SKIPPED and not row.quickstart_opt_in]
INITS = tuple(row.run for row in RUNS if row.translate) + (RANDOM,)
ALIGNER = next(row for row in OBJECTIVES if row.aligns)  # and its starts_from: before/after
STAGES = (
    ["corpus", "data", "report", "align"]
    + [f"pretrain-{row.run}" for row in RUNS]
    + [f"init-{init}" for init in INITS if init != RANDOM]
    + [f"{stage}-{init}" for init in INITS for stage in ("finetune", "eval")]
)


def _quickstart(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", SCRIPT, *map(str, args)], capture_output=True, text=True,
        env=env(OMP_NUM_THREADS="1"), timeout=900,
    )  # fmt: skip


def _again(capsys, monkeypatch, *args) -> subprocess.CompletedProcess:
    """The quickstart through its entry point in the test process (no start-up of torch and
    fairseq; the smoke run above is the script's): its exit status and output."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYTHONUNBUFFERED"):
        monkeypatch.setenv(var, "1")  # main() sets them for its stages: restored after
    monkeypatch.setenv("PATH", env()["PATH"])  # the venv's bin first, as the script puts it
    # its stages fork from the zygotes the smoke run's stages forked from (the test
    # process's broker, which that run was given too), not from zygotes of their own
    monkeypatch.setenv(BROKER_ENV, env()[BROKER_ENV])
    capsys.readouterr()
    try:
        code = quickstart.main([str(a) for a in args])
    except SystemExit as parser_error:  # the parser's one line
        code = parser_error.code
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["quickstart", *args], code, out, err)


def _fixture_text(root) -> str:
    """The fixture corpus in the quickstart's layout (its valid set split into valid/test)."""
    text = root / "fixture-text"
    text.mkdir()
    for lang in ("en", "de"):
        for name in ("train", "mono"):
            shutil.copy(os.path.join(FIXTURE_TEXT, f"{name}.{lang}"), text / f"{name}.{lang}")
        with open(os.path.join(FIXTURE_TEXT, f"valid.{lang}"), encoding="utf-8") as f:
            lines = f.readlines()
        (text / f"valid.{lang}").write_text("".join(lines[:20]), encoding="utf-8")
        (text / f"test.{lang}").write_text("".join(lines[20:]), encoding="utf-8")
    return str(text)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    root = tmp_path_factory.mktemp("quickstart")
    run_dir = root / "run"
    args = ["--smoke", "--run-dir", run_dir, *(f"--no-{run}" for run in SKIPPED)]
    if not os.path.isdir("/usr/share/locale/de/LC_MESSAGES"):
        args += ["--text", _fixture_text(root), "--vocab-size", "500"]
    start = time.time()
    proc = _quickstart(*args)
    seconds = time.time() - start
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    with open(run_dir / "results.json", encoding="utf-8") as f:
        summary = json.load(f)
    return {"run": run_dir, "args": args, "proc": proc, "seconds": seconds, "summary": summary}


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def test_every_stage_ran_with_visible_progress(smoke):
    out = smoke["proc"].stdout
    for stage in STAGES:
        assert re.search(rf"^== \[{stage}\] .* start", out, re.M), stage
        assert re.search(rf"^== \[{stage}\] .* done in \d+ s", out, re.M), stage
        with open(smoke["run"] / "stamps" / f"{stage}.done", encoding="utf-8") as f:
            stamp = json.load(f)
        assert stamp["seconds"] >= 0 and stamp["finished"], stage
        # the stamp holds the exact command the log starts with
        log = _lines(smoke["run"] / "logs" / f"{stage}.log")
        assert log[0] == "$ " + " ".join(stamp["command"]), stage
    # fairseq's own progress lines reach the console, prefixed by their stage
    assert re.search(r"^\[pretrain-veco\] .*\| train_inner \| \{", out, re.M)
    assert re.search(r"^\[finetune-random\] .*\| valid \| \{.*valid_loss", out, re.M)
    assert "quickstart finished in" in out


def test_artifacts_exist(smoke):
    run = smoke["run"]
    for name in ("results.md", "results.json", "learning_curve.png"):
        assert (run / name).stat().st_size > 0, name
    with open(run / "learning_curve.png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    n_test = len(_lines(run / "nmt-bin" / "test.raw.en"))
    assert n_test == len(_lines(run / "nmt-bin" / "test.raw.de")) > 0
    for init in INITS:
        hyps = _lines(run / "eval" / init / "test.hyp.de")
        assert len(hyps) == n_test, init  # every test sentence translated
        assert (run / "eval" / init / "averaged.pt").is_file()
        generate = "\n".join(_lines(run / "eval" / init / "generate-test.txt"))
        assert len(re.findall(r"^H-\d+\t", generate, re.M)) == n_test
    # fine-tuning data: one joined dictionary, the pre-training one (+ nothing else)
    assert _lines(run / "nmt-bin" / "dict.en.txt") == _lines(run / "data" / "dict.txt")
    assert _lines(run / "nmt-bin" / "dict.de.txt") == _lines(run / "data" / "dict.txt")


def _is_finite(x):
    return isinstance(x, (int, float)) and math.isfinite(x)


def test_report_numbers_are_finite_and_well_formed(smoke):
    summary, run = smoke["summary"], smoke["run"]
    assert list(summary["results"]) == list(INITS)
    n_test = len(_lines(run / "nmt-bin" / "test.raw.en"))
    for init, r in summary["results"].items():
        test = r["test"]
        assert test["sentences"] == n_test
        for key in ("sacrebleu", "tokenized_bleu"):
            assert _is_finite(test[key]) and 0 <= test[key] <= 100, (init, key)
        assert test["sacrebleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
        assert test["tokenized_bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:none")
        ft = r["finetune"]
        assert ft["updates"] == 20 and _is_finite(ft["seconds"])
        assert [p["update"] for p in ft["curve"]] == [10, 20]
        for p in ft["curve"]:
            assert _is_finite(p["valid_loss"]) and p["valid_loss"] > 0
            assert _is_finite(p["valid_bleu"]) and 0 <= p["valid_bleu"] <= 100
        pre = r["pretraining"]
        if init == "random":
            assert pre is None
        else:
            assert pre["criterion"] == objective(init).criterion
            assert pre["updates"] == 20 and _is_finite(pre["valid_loss"])
    # the learning curve went down for every initialization
    for r in summary["results"].values():
        curve = r["finetune"]["curve"]
        assert curve[-1]["valid_loss"] < curve[0]["valid_loss"] + 0.5
    assert len(summary["examples"]) == 2
    for ex in summary["examples"]:
        assert set(ex["hypotheses"]) == set(INITS) and ex["source"] and ex["reference"]
    table = (run / "results.md").read_text(encoding="utf-8")
    for label in (labels()[init] for init in INITS):
        row = next(line for line in table.splitlines() if line.startswith(f"| {label} |"))
        numbers = re.findall(r"\| (-?[0-9.]+) ", row)
        assert len(numbers) >= 4 and all(math.isfinite(float(x)) for x in numbers), row
    assert "sacreBLEU signature: `nrefs:1" in table
    align = summary["alignment"]
    assert align["pairs"] == len(_lines(run / "align" / "test.en")) > 0
    after = ALIGNER.run
    assert align[f"{after}_updates"] == 5 and _is_finite(align["label_share"])
    for model in (ALIGNER.starts_from, after):
        assert len(_lines(run / "align" / f"{model}.align")) == align["pairs"]
    assert len(align["examples"]) == 2 and all(ex["links"][after] for ex in align["examples"])
    assert "## Word alignment" in table and "‖" in table
    assert table in smoke["proc"].stdout  # the table is printed


def test_rerun_skips_finished_stages(smoke, capsys, monkeypatch):
    run = smoke["run"]
    checkpoints = sorted((run / "finetune").rglob("*.pt"))
    before = {p: p.stat().st_mtime_ns for p in checkpoints}
    start = time.time()
    proc = _again(capsys, monkeypatch, *smoke["args"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert time.time() - start < 30
    for stage in STAGES:
        assert f"== [{stage}] finished earlier: skipped" in proc.stdout, stage
    assert " start (log:" not in proc.stdout
    assert {p: p.stat().st_mtime_ns for p in checkpoints} == before


def test_redone_stage_refreshes_the_report(smoke, capsys, monkeypatch):
    """Deleting one stamp redoes that stage only, and the report after it."""
    run = smoke["run"]
    (run / "stamps" / "eval-random.done").unlink()
    proc = _again(capsys, monkeypatch, *smoke["args"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    started = re.findall(r"^== \[([\w-]+)\] .* start", proc.stdout, re.M)
    assert sorted(started) == ["eval-random", "report"]
    with open(run / "results.json", encoding="utf-8") as f:
        again = json.load(f)["results"]["random"]["test"]
    assert again["sacrebleu"] == smoke["summary"]["results"]["random"]["test"]["sacrebleu"]


def test_rerun_with_other_settings_is_refused(smoke, capsys, monkeypatch):
    proc = _again(capsys, monkeypatch, *smoke["args"], "--finetune-updates", "30")
    assert proc.returncode != 0
    assert re.search(
        r"stage finetune-\w+ finished earlier with other settings .*--force", proc.stderr
    ), proc.stderr[-2000:]
    assert (smoke["run"] / "stamps" / "finetune-veco.done").is_file()  # nothing was lost


def test_force_refuses_a_foreign_directory(tmp_path, capsys, monkeypatch):
    (tmp_path / "precious.txt").write_text("keep me")
    proc = _again(capsys, monkeypatch, "--force", "--run-dir", tmp_path)
    assert proc.returncode != 0 and "does not look like a quickstart run directory" in proc.stderr
    assert (tmp_path / "precious.txt").read_text() == "keep me"


def test_bad_flags_fail_fast(tmp_path, capsys, monkeypatch):
    proc = _again(capsys, monkeypatch, "--run-dir", tmp_path / "r", "--finetune-updates", "25")
    assert proc.returncode != 0 and "multiple of --eval-interval" in proc.stderr
    proc = _again(capsys, monkeypatch, "--run-dir", tmp_path / "r", "--arch", "huge")
    assert proc.returncode != 0 and "--arch huge" in proc.stderr
    assert not (tmp_path / "r").exists()
