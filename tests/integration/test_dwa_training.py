"""fairseq-train --criterion dwa (XLM-Align) on real text, from a cold start."""

import pytest
import torch

from tests.helpers.runner import RESET, json_logs, pretrain_args, run
from veco_plugin.checkpoints.trusted_load import load_trusted

WARNING = "starts from RANDOM weights"


@pytest.fixture(scope="module")
def dwa_run(pretrain_data, cold_start, tmp_path_factory):
    """120 dwa updates from the cold start: (save dir, fairseq-train output)."""
    save = tmp_path_factory.mktemp("dwa")
    args = pretrain_args(pretrain_data, save, "dwa", 120, "--restore-file", cold_start, *RESET)
    return save, run("fairseq-train", args)


def test_dwa_learns_from_a_cold_start(dwa_run):
    save, proc = dwa_run
    assert WARNING not in proc.stdout + proc.stderr
    assert "the pointer network starts random" in proc.stdout + proc.stderr
    records = json_logs(proc.stdout)
    first, last = records[0], records[-1]
    for term in ("mono_mlm", "bi_tlm", "bi_dwa"):
        assert f"{term}_loss" in first and f"{term}_acc" in first, term
    # the pointer network starts random: DWA must learn to point at the labels
    assert last["bi_dwa_loss"] < first["bi_dwa_loss"] - 0.4, records
    assert last["bi_dwa_acc"] > 1.5 * first["bi_dwa_acc"], records
    # labels exist and are a minority of the masked tokens (high precision filtering)
    assert 1.0 < last["dwa_label_share"] < 100.0, records
    assert last["dwa_links_per_pair"] > 1.0, records
    valid = json_logs(proc.stdout, "valid")
    assert valid and "bi_dwa_loss" in valid[-1]
    state = load_trusted(save / "checkpoint_last.pt")
    assert {"pointer.q_proj.weight", "pointer.k_proj.weight"} <= set(state["model"])


def test_dwa_from_random_weights_warns(pretrain_data, tmp_path):
    args = pretrain_args(pretrain_data, tmp_path / "ck", "dwa", 2, "--disable-validation")
    proc = run("fairseq-train", args)
    assert WARNING in proc.stdout + proc.stderr
    assert json_logs(proc.stdout, "train")[-1]["num_updates"] == 2


def test_a_dwa_checkpoint_continues_as_ca_mlm(pretrain_data, dwa_run, tmp_path):
    """Another objective drops the pointer network instead of refusing the checkpoint."""
    args = pretrain_args(
        pretrain_data, tmp_path / "ca", "ca_mlm", 4, "--disable-validation",
        "--restore-file", dwa_run[0] / "checkpoint_last.pt", *RESET,
    )  # fmt: skip
    proc = run("fairseq-train", args)
    assert "dropping the checkpoint's pointer network" in proc.stdout + proc.stderr
    assert torch.isfinite(torch.tensor(json_logs(proc.stdout, "train")[-1]["loss"]))
