"""benchmarks/gpu.py --dry-run: every run.py stage of the GPU command end to end on the CPU
at veco_tiny size, the JSON and the README tables it writes; run.py's batch-size search.
The trainer stage: its flags and its table here, trainer_speed.py's run in
tests/integration/test_benchmarks_smoke.py (the dry run would make its DATA again)."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from tests.helpers.runner import REPO, env

BENCHMARKS = os.path.join(REPO, "benchmarks")
STAGES = ["base_bf16", "base_fp16", "large_bf16", "max_tokens", "profile", "tests"]


def load(name):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", f"{BENCHMARKS}/{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("limit", [1, 5, 64, 100])
@pytest.mark.parametrize("largest", [0, 1, 3, 37, 64, 1000])
def test_largest_fitting_doubles_then_bisects(limit, largest):
    run = load("run")
    found, tries = run.largest_fitting(lambda n: n <= largest, limit)
    assert found == min(largest, limit)
    assert all(ok == (n <= largest) and 1 <= n <= limit for n, ok in tries)
    assert len(tries) == len({n for n, _ in tries}) <= 2 * limit.bit_length() + 1


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu")
    proc = subprocess.run(
        [sys.executable, f"{BENCHMARKS}/gpu.py", "--dry-run", "--out", str(out)]
        + ["--stages", ",".join(STAGES)],
        capture_output=True,
        text=True,
        env=env(),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (path,) = out.glob("cpu-*.json")
    return path, json.loads(path.read_text()), proc.stdout


def test_every_stage_writes_its_figures(dry_run):
    _, result, _ = dry_run
    assert result["dry_run"] is True
    assert {"device", "torch", "cuda", "fairseq", "numpy", "python"} <= set(result["environment"])
    assert list(result["stages"]) == STAGES
    for name, stage in result["stages"].items():
        assert stage["returncode"] == 0 and stage["seconds"] > 0, name
        assert stage["command"].startswith(("python benchmarks/run.py", "PYTEST_")), name
    for name in ("base_bf16", "base_fp16", "large_bf16"):
        r = result["stages"][name]["result"]
        assert (r["device"], r["cuda"], r["size"]) == ("cpu", None, "veco_tiny"), name
        assert r["dtype"] == name.split("_")[1] and r["command"].startswith("benchmarks/run.py")
        for variant in ("masked_lm", "ca_mlm", "tlm"):
            assert r[f"{variant}_tokens_per_s"] > 0 and r[f"{variant}_peak_mem_mb"] > 0, variant
            assert r[f"{variant}_mfu"] is None  # no peak FLOP/s for a CPU
        assert r["ca_mlm_time_ratio"] > 0 and r["ca_mlm_mem_ratio"] > 1
    assert "weam_tokens_per_s" not in result["stages"]["large_bf16"]["result"]  # --variants
    search = result["stages"]["max_tokens"]["result"]
    for key in ("max_tokens_masked_lm", "max_tokens_ca_mlm_checkpointed"):
        assert search[key] > 0 and search[f"{key}_pairs"] == 3  # --search-max-pairs
        assert search[f"{key}_peak_mem_mb"] > 0
    profiled = result["stages"]["profile"]["result"]
    for variant in ("masked_lm", "ca_mlm"):
        shares = {k: v for k, v in profiled.items() if k.startswith(f"{variant}_share_")}
        assert 0 < profiled[f"{variant}_busy"] and abs(sum(shares.values()) - 1) < 1e-6
        assert shares[f"{variant}_share_matmul"] > 0, shares
    assert (
        search["max_tokens_ca_mlm_checkpointed_peak_mem_mb"]
        < search["max_tokens_ca_mlm_peak_mem_mb"]
    )


def test_the_gpu_tests_are_selected_and_skip_on_cpu(dry_run):
    _, result, _ = dry_run
    tests = result["stages"]["tests"]
    assert tests["skipped"] == len(tests["tests"]) >= 6 and tests["failed"] == 0
    assert any("test_host_syncs" in t and "cuda" in t for t in tests["tests"])


def test_readme_tables(dry_run):
    path, _, _ = dry_run
    md = path.with_suffix(".md").read_text()
    assert "| veco_tiny | fp16 | ca_mlm |" in md and "| veco_tiny | bf16 | masked_lm |" in md
    assert "| ca_mlm | " in md.split("Largest batch")[1]
    assert "- base_bf16: " in md.split("targets for ca_mlm")[1]
    assert "GPU tests: 0 passed, 0 failed" in md
    assert "| ca_mlm | " in md.split("time goes")[1] and "- profile: `" in md


def test_previous_keeps_finished_stages(dry_run, tmp_path):
    path, result, _ = dry_run
    proc = subprocess.run(
        [sys.executable, f"{BENCHMARKS}/gpu.py", "--dry-run", "--out", str(tmp_path)]
        + ["--previous", str(path), "--stages", "base_bf16,tests"],
        capture_output=True,
        text=True,
        env=env(),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "stages none" in proc.stdout
    assert json.loads((tmp_path / path.name).read_text())["stages"] == result["stages"]


def test_the_trainer_stage_parses_and_its_table_is_written(capsys):
    gpu, speed = load("gpu"), load("trainer_speed")
    assert "trainer" in gpu.parse_args(["--dry-run"]).stages  # a default stage
    a = speed.parse_args(gpu.STAGES["trainer"] + gpu.TRAINER_DRY)
    assert (a.dtype, a.layers, a.dim, a.updates, a.warmup) == ("fp32", 1, 32, 1, 0)
    flags = gpu.STAGES["trainer"]
    at = flags.index("--dtype")
    real = speed.parse_args(flags[:at] + flags[at + 2 :])  # bf16 needs a GPU
    assert (real.layers, real.dim, real.ffn, real.heads, real.positions) == (12, 768, 3072, 12, 256)
    row = {"real_tokens_per_s": 1000.0, "pad_share": 0.125, "syncs_per_update": 2, "mfu": 0.5}
    stage = {"command": "python benchmarks/trainer_speed.py", "result": {"rows": {"ca_mlm": row}}}
    results = {
        "environment": {k: "x" for k in ("device", "torch", "cuda", "fairseq")},
        "date": "2026-11-29",
        "dry_run": False,
        "stages": {"trainer": stage},
    }
    md = gpu.markdown(results)
    assert (
        "Through fairseq's own Trainer" in md
        and "- trainer: `python benchmarks/trainer_speed" in md
    )
    assert "| ca_mlm | 1000 | - | 12.5% | 2 | - | - | - | - | - | 50.0% |" in md


@pytest.mark.parametrize("budget", ["-5", "0", "nan"])
def test_a_budget_of_no_seconds_is_one_line(budget, capsys):
    """Was accepted: no stage ran and an empty result was written."""
    with pytest.raises(SystemExit) as info:
        load("gpu").parse_args(["--budget", budget, "--dry-run"])
    assert info.value.code == 2
    assert (
        capsys.readouterr()
        .err.splitlines()[-1]
        .endswith(f"--budget {float(budget)}: give the seconds the stages may take, above 0")
    )


@pytest.mark.parametrize(
    "flags, said",
    [
        (["--json", "/"], "--json / is a directory: name the file to write"),
        (["--data", __file__], f"--data {__file__}: no such directory (a veco_pretraining DATA)"),
        (["--updates", "0"], "--updates must be >= 1"),
    ],
)
def test_the_trainer_benchmark_refuses_bad_flags_in_one_line(flags, said, capsys):
    """Before any work (it used to run every row, then fail writing --json)."""
    with pytest.raises(SystemExit) as info:
        load("trainer_speed").parse_args(flags)
    assert info.value.code == 2 and capsys.readouterr().err.splitlines()[-1].endswith(said)
