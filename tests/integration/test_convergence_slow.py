"""Slow (``make test-slow``): the paper's central claim at small scale.

Fine-tuning a ``veco_transformer`` initialized from CA-MLM pre-training reaches a
lower validation loss than the same architecture from random initialization, at
every checkpoint of the same budget (quickstart defaults, smaller fine-tuning)."""

import json
import os
import subprocess

import pytest

from tests.helpers.runner import REPO, env


@pytest.mark.slow
def test_veco_initialization_beats_random(tmp_path):
    run_dir = tmp_path / "qs"
    proc = subprocess.run(
        [
            "bash",
            os.path.join(REPO, "scripts", "quickstart.sh"),
            "--run-dir",
            str(run_dir),
            "--no-xlm",
            "--finetune-updates",
            "300",
            "--test-size",
            "300",
        ],
        capture_output=True,
        text=True,
        env=env(),
        timeout=3600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads((run_dir / "results.json").read_text())["results"]
    veco, random = results["veco"]["finetune"]["curve"], results["random"]["finetune"]["curve"]
    assert [p["update"] for p in veco] == [p["update"] for p in random] == [100, 200, 300]
    for ours, theirs in zip(veco, random):
        assert ours["valid_loss"] < theirs["valid_loss"] - 0.2, (ours, theirs)
