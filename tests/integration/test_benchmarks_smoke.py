"""benchmarks/run.py runs end to end and writes the flat JSON of ratios (no timing asserted)."""

import json
import math
import os
import subprocess
import sys

from runner import REPO, env

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
    "weam_time_ratio",
    "nmt_train_tps_ratio",
    "nmt_beam_sps_ratio",
]


def test_benchmark_json(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [
            sys.executable,
            os.path.join(REPO, "benchmarks", "run.py"),
            "--json",
            str(out),
            "--layers",
            "1",
            "--dim",
            "32",
            "--ffn",
            "64",
            "--heads",
            "2",
            "--vocab",
            "200",
            "--pairs",
            "4",
            "--rounds",
            "1",
            "--max-len",
            "24",
            "--beam-sentences",
            "4",
        ],
        capture_output=True,
        text=True,
        env=env(),
        timeout=600,
    )
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
        "nmt_train_tps_ratio",
    } <= set(built)
    assert "ca_mlm" in proc.stdout and "masked_lm" in proc.stdout
