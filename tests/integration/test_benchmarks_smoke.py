"""benchmarks/run.py runs end to end and writes the flat JSON of ratios (no timing asserted)."""

import json
import math
import os
import re
import sys

import pytest

from tests.helpers import wmt_fixture
from tests.helpers.runner import REPO, run
from veco_plugin.objectives import OBJECTIVES

KEYS = [
    "ca_mlm_time_ratio",
    "ca_mlm_nostopgrad_time_ratio",
    "ca_mlm_tlm_time_ratio",
    "ca_mlm_mem_ratio",
    "tlm_time_ratio",
    "dwa_time_ratio",
    "dwa_selflabel_share",
    "sinkhorn_share",
    "align_mlm_time_ratio",
    "align_mlm_mem_ratio",
    "align_mlm_time_ratio_vs_tlm",
    "weam_time_ratio",
    "weam_mem_ratio",
    "weam_time_ratio_vs_tlm",
    "nmt_train_tps_ratio",
    "nmt_beam_sps_ratio",
]


def python(script, *args, timeout=None):
    """``python benchmarks/SCRIPT args`` forked from a warm interpreter (not 5-10 s of
    imports each): its exit status and output."""
    argv = [os.path.join(REPO, "benchmarks", script), *args]
    return run(os.path.basename(sys.executable), argv, check=False, timeout=timeout)


def test_benchmark_json(tmp_path):
    out = tmp_path / "bench.json"
    proc = python(
        "run.py", "--json", out, "--layers", "1", "--dim", "32", "--ffn", "64", "--heads", "2",
        "--vocab", "200", "--pairs", "4", "--rounds", "1", "--max-len", "24",
        "--beam-sentences", "4", timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    for key in KEYS:
        assert key in result, key
        assert result[key] is None or (math.isfinite(result[key]) and result[key] > 0), key
    built = [k for k in KEYS if result[k] is not None]
    assert {
        "ca_mlm_time_ratio",
        "ca_mlm_mem_ratio",
        "tlm_time_ratio",
        "dwa_time_ratio",
        "dwa_selflabel_share",
        "sinkhorn_share",
        "nmt_train_tps_ratio",
        "align_mlm_time_ratio",
        "align_mlm_time_ratio_vs_tlm",
        "weam_time_ratio",
        "weam_time_ratio_vs_tlm",
    } <= set(built)
    assert "ca_mlm" in proc.stdout and "masked_lm" in proc.stdout
    # every variant of the table is timed, on the same batches (word list, links generated)
    for row in OBJECTIVES:
        for name, _ in row.benchmark:
            assert result[f"{name}_time_ratio"] > 0 and result[f"{name}_mem_ratio"] > 0, name
            assert any(line.split()[:1] == [name] for line in proc.stdout.splitlines()), name
    assert "2000 entries: 2000 usable" in proc.stderr  # the align_mlm word list
    assert re.search(r"^word alignments: [1-9]\d* piece links", proc.stdout, re.M)


@pytest.mark.slow  # 2-7 min on 2 cores: a benchmark's pipeline, not the plugin's
@pytest.mark.skipif(
    not wmt_fixture.have_catalogs(("de",)), reason="no German gettext catalogs (the corpus)"
)
def test_init_sweep_smoke(tmp_path):
    """benchmarks/init_sweep.py end to end at toy size: the data stage of the quickstart,
    one pre-training with a checkpoint per budget, the fine-tunings, the differences."""
    run = tmp_path / "sweep"
    # fmt: off
    args = ["--run-dir", run, "--max-train-pairs", "1000", "--valid-size", "40",
            "--vocab-size", "1000", "--pretrain-updates", "0,5,10", "--finetune-updates", "10",
            "--eval-interval", "5", "--pretrain-max-tokens", "1024", "--max-tokens", "1024",
            "--pretrain-warmup", "5", "--finetune-warmup", "5", "--no-variants"]
    # fmt: on

    def sweep():
        return python("init_sweep.py", *args, timeout=600)

    proc = sweep()
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    result = json.loads((run / "sweep.json").read_text())
    assert sorted(result["curves"]) == ["ft-0", "ft-10", "ft-5"]
    assert sorted(result["differences"]) == ["ft-10", "ft-5"]
    for name, points in result["differences"].items():
        assert [p["update"] for p in points] == [5, 10], name
        for p in points:
            assert all(math.isfinite(p[k]) for k in ("bleu", "loss", "d_bleu", "d_loss"))
            assert p["d_loss"] == pytest.approx(
                p["loss"] - result["curves"]["ft-0"][points.index(p)]["valid_loss"]
            )
    saved = os.listdir(run / "pretrain")
    assert [any(f.endswith(f"_{b}.pt") for f in saved) for b in (5, 10)] == [True, True]
    assert "| ft-10 (vs ft-0) |" in proc.stdout
    again = sweep()
    assert again.returncode == 0 and "start:" not in again.stdout
    assert again.stdout.count("finished earlier: skipped") == 7  # data, pretrain, 2 inits, 3 ft


def test_init_sweep_bad_flag_is_one_line(tmp_path):
    proc = python("init_sweep.py", "--run-dir", tmp_path, "--pretrain-updates", "0")
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == [
        "init_sweep.py: error: --pretrain-updates '0': give at least one budget > 0"
    ]


def test_token_tasks_speed_through_the_gpu_stage(tmp_path):
    """benchmarks/token_tasks_speed.py as gpu.py's opt-in ``token_tasks`` stage runs it
    (--dry-run: the CPU, veco_tiny, one round): every column timed on the same tokens, the
    ratio to sentence_prediction and issue 31's verdict in the JSON and the README table."""
    proc = python("gpu.py", "--dry-run", "--stages", "token_tasks", "--out", tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (path,) = tmp_path.glob("cpu-*.json")
    stage = json.loads(path.read_text())["stages"]["token_tasks"]
    assert stage["command"].startswith("python benchmarks/token_tasks_speed.py")
    r = stage["result"]
    assert (r["device"], r["size"], r["dtype"], r["batch"]) == ("cpu", "veco_tiny", "bf16", 4)
    columns = ["sentence_prediction", "veco_tagging", "veco_span_qa"]
    if r["transformers"] is not None:
        columns += ["hf_token_classification", "hf_question_answering"]
        assert r["veco_tagging_vs_hf"] > 0 and r["veco_span_qa_vs_hf"] > 0
    else:
        assert "transformers" in r["transformers_skipped"]
    assert r["tokens_per_step"] > 0 and r["sentence_prediction_ratio"] == 1.0
    for name in columns:
        assert r[f"{name}_tokens_per_s"] > 0 and r[f"{name}_peak_mem_mb"] > 0, name
        assert math.isfinite(r[f"{name}_ratio"]) and r[f"{name}_mfu"] is None, name
    for name in ("veco_tagging", "veco_span_qa"):
        assert r[f"{name}_met"] == (r[f"{name}_ratio"] >= 0.95)
    md = path.with_suffix(".md").read_text()
    assert "| veco_tagging | " in md.split("sentence_prediction:")[1]
    assert "time x masked_lm" not in md and "- token_tasks: `" in md


def test_the_trainer_benchmark_trains_every_row_through_fairseqs_trainer(pretrain_data, tmp_path):
    """benchmarks/trainer_speed.py: fairseq's Trainer from each row's command line, one
    timed update a row on a 1-layer model (no timing asserted)."""
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    import trainer_speed

    out = tmp_path / "speed.json"
    shape = ["--layers", "1", "--dim", "32", "--ffn", "64", "--heads", "2"]
    rows = trainer_speed.main(
        ["--data", pretrain_data, *shape, "--max-tokens", "600", "--positions", "48",
         "--updates", "1", "--warmup", "1", "--json", str(out)]
    )  # fmt: skip
    assert list(rows) == list(trainer_speed.ROWS)
    assert json.loads(out.read_text())["rows"].keys() == rows.keys()
    for name, r in rows.items():
        assert r["real_tokens_per_s"] > 0 and 0 <= r["pad_share"] < 1, (name, r)
        assert r["ops_per_update"] > 100 and r["peak_mem_mb"] > 0, (name, r)
        # flops.py's model of the update against torch's count of it
        assert r["flop_counter_ratio"] == pytest.approx(1.0, abs=0.02), (name, r)
        # the plugin's rows: its one batched transfer of the logged values and nothing else
        ours = {site: n for site, n in r["sync_sites"].items() if site.startswith("veco_plugin/")}
        assert sum(ours.values()) <= 1 and all("terms/scores.py" in s for s in ours), ours
    # fairseq's masked_lm packs complete sentences into its rows; the plugin pads each one
    assert rows["masked_lm"]["pad_share"] < rows["mlm"]["pad_share"]
    assert rows["masked_lm"]["time_per_real_token_vs_masked_lm"] == 1.0


def test_the_trainer_benchmark_counts_the_other_objectives_over_a_whole_update(
    aligned_data, word_lists, tmp_path
):
    """dwa, align_mlm, weam and dict_mlm through fairseq's Trainer (``--rows``, a DATA
    with word alignments, the En-De word list): nothing waits for the device from the
    plugin's code but its one transfer of the logged values."""
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    import trainer_speed

    shape = ["--layers", "1", "--dim", "32", "--ffn", "64", "--heads", "2"]
    rows = trainer_speed.main(
        ["--data", aligned_data, "--word-list", str(word_lists), *shape, "--max-tokens", "600",
         "--positions", "48", "--updates", "1", "--warmup", "1",
         "--rows", ",".join(trainer_speed.MORE_ROWS)]
    )  # fmt: skip
    assert list(rows) == list(trainer_speed.MORE_ROWS)
    for name, r in rows.items():
        assert r["real_tokens_per_s"] > 0 and r["ops_per_update"] > 100, (name, r)
        assert r["flop_counter_ratio"] == pytest.approx(1.0, abs=0.05), (name, r)
        ours = {site: n for site, n in r["sync_sites"].items() if site.startswith("veco_plugin/")}
        assert sum(ours.values()) <= 1 and all("terms/scores.py" in s for s in ours), ours
