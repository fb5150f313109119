"""``veco-derived-transfer --curve``'s pre-training (``stages.continued``) through the
real fairseq-train: the model kept at each budget is, bit for bit, the model of a run of
that many updates (one uninterrupted run compared), a re-run keeps what is kept, and the
tokens seen and passes read from the stage's log are the uninterrupted run's records; and
``veco-derived-transfer --smoke --curve`` end to end (OUT/curve.{md,json,png}): the README's
toy block."""

import json
import os
import re

import pytest
import torch

from tests.helpers.runner import BIN, env, monolingual, pretrain_args, run
from tests.helpers.toy_blocks import README, block_log, marked_blocks, toy_run
from veco_plugin.checkpoints.trusted_load import load_trusted
from veco_plugin.derived_transfer import curve
from veco_plugin.derived_transfer.stages import budget_checkpoint, continued
from veco_plugin.pipeline.runner import PipelineError, Stage, run_resumable

BUDGETS = (30, 60)


def _args(data, save_dir):
    args = pretrain_args(data, save_dir, "veco_terms", BUDGETS[-1], "--terms", "mono_mlm=1")
    return monolingual(args) + ["--log-interval", "10"]


def _run_curve(data, out, budgets=BUDGETS):
    save_dir = str(out / "pretrain")
    stage = Stage("pretrain-curve", [os.path.join(BIN, "fairseq-train"), *_args(data, save_dir)],
                  continued(save_dir, budgets), env=env())  # fmt: skip
    assert run_resumable(str(out), 1, "test", lambda runner: runner.run_pipeline([stage])) == 0
    return save_dir


def test_the_model_at_each_budget_is_the_run_of_that_many_updates(pretrain_data, tmp_path):
    save_dir = _run_curve(pretrain_data, tmp_path / "curve")
    direct = run("fairseq-train", _args(pretrain_data, tmp_path / "direct")).stdout
    kept = {b: load_trusted(budget_checkpoint(save_dir, b)) for b in BUDGETS}
    last = load_trusted(str(tmp_path / "direct" / "checkpoint_last.pt"))
    for b, state in kept.items():
        assert state["optimizer_history"][-1]["num_updates"] == b
    for name, value in last["model"].items():  # the same arguments, batches, threads: exact
        assert torch.equal(kept[BUDGETS[-1]]["model"][name], value), name
    assert any(not torch.equal(kept[BUDGETS[0]]["model"][k], v) for k, v in last["model"].items())

    log = tmp_path / "curve" / "logs" / "pretrain-curve.log"
    text = log.read_text(encoding="utf-8")
    assert text.count(f"Loaded checkpoint {save_dir}/checkpoint_last.pt") == 1  # the resume
    (tmp_path / "direct.log").write_text(direct, encoding="utf-8")
    assert curve.read_progress(str(log)) == curve.read_progress(str(tmp_path / "direct.log"))
    progress = curve.read_progress(str(log))[BUDGETS[-1]]
    assert progress.tokens > 0 and 0 < progress.passes

    # the stamp removed (an interrupted pipeline): the kept models are not trained again
    before = os.stat(budget_checkpoint(save_dir, BUDGETS[-1])).st_mtime_ns
    (tmp_path / "curve" / "stamps" / "pretrain-curve.done").unlink()
    _run_curve(pretrain_data, tmp_path / "curve")
    assert os.stat(budget_checkpoint(save_dir, BUDGETS[-1])).st_mtime_ns == before
    assert "done training" not in log.read_text(encoding="utf-8").split(text)[-1]

    # a budget below the updates made cannot be kept: refused, the run left as it is
    (tmp_path / "curve" / "stamps" / "pretrain-curve.done").unlink()
    with pytest.raises(
        PipelineError,
        match="is at 60 updates: the model at 20 was not kept; give budgets from 60 on",
    ):
        _run_curve(pretrain_data, tmp_path / "curve", (20, BUDGETS[-1]))
    last_now = load_trusted(os.path.join(save_dir, "checkpoint_last.pt"))
    assert last_now["optimizer_history"][-1]["num_updates"] == BUDGETS[-1]


def test_a_curve_scores_the_model_at_each_budget_against_tokens_seen(tmp_path_factory):
    """--curve: one pre-training continued to each budget, the model at each fine-tuned
    and scored; OUT/curve.{md,json,png} with the tokens and passes of the run's log. The
    run is the README's toy block (run once for tests/integration/test_doc_toy_blocks.py)."""
    blocks = marked_blocks(README)
    (i,) = [i for i, (_, block) in enumerate(blocks) if "veco-derived-transfer " in block]
    assert "--curve 50,100" in blocks[i][1]
    folder = toy_run(tmp_path_factory, README)
    stdout = block_log(folder, i).read_text(encoding="utf-8")
    out = folder / "runs" / "toy" / "derived"
    assert "each at 50, 100 updates" in stdout
    assert stdout.count("start (log: ") == len(re.findall(r"done in", stdout))
    for b in (50, 100):
        assert (out / "pretrain" / "trans-mlm" / f"checkpoint_u{b}.pt").is_file()
        assert f"| T_trans | MLM | {b} |" in stdout  # the curve's table
    assert "| MLM @ 100 |" in stdout and "| MLM @ 50 |" not in stdout  # results.md
    payload = json.loads((out / "curve.json").read_text(encoding="utf-8"))
    points = payload["points"]
    assert [p["updates"] for p in points] == [50, 100] and payload["settings"]["curve"] == [50, 100]
    assert (
        0 < points[0]["tokens"] < points[1]["tokens"]
        and 0 < points[0]["passes"] < points[1]["passes"]
    )
    for p in points:
        assert p["delta"] == pytest.approx(p["sup"] - p["zs"]) and 0 <= p["alignment"] <= 1
    assert "| T_trans | MLM | 100 |" in (out / "curve.md").read_text(encoding="utf-8")
    assert (out / "curve.png").stat().st_size > 0
