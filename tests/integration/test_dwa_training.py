"""fairseq-train --criterion dwa (XLM-Align) on real text, from a cold start.

What "DWA learns" measures: the pointer network's loss and accuracy on the *validation*
pairs after 120 updates, against the same model validated before learning (the same cold
start and the same seed, so the same random pointer, one update at lr 1e-12). Both runs
see the same fixed pairs, so the gap is learning alone.

The check it replaces compared the first and the last ``train_inner`` record (updates
1-25 against 76-100): different batches, and the pointer's loss depends on the batch (a
pointer over a longer target has a higher loss). Over the same 120 batches a frozen
pointer "fell" about 0.12 nat by itself, and across cold-start/dwa seeds 1-5 the trained
fall was about -0.04 to 0.80 (threshold 0.4) and the accuracy ratio 1.5 to 2.8 (threshold
1.5), read from 5-update records.

The 0.396 that failed ``make test`` "on a busy machine" is what seed 1 gave on every run
here (with fairseq's attention, before SDPA): the runs are deterministic (the runner pins
OMP_NUM_THREADS=1; seed 1 gave the same losses to the last digit at load 0.3 and at load
9.5 on 2 cores, and with the corpus, sentencepiece model and dictionary rebuilt); load and
the number of xdist workers change nothing (the thread count does: 2 threads change the
floats). What moves the number is the seed, the corpus (built from the machine's gettext
catalogs) and any change to the code.

Measured over seeds: see ``LOSS_GAIN`` and ``ACC_GAIN``.
"""

import pytest
import torch

from tests.helpers.runner import RESET, json_logs, pretrain_args, run
from veco_plugin.checkpoints.trusted_load import load_trusted

WARNING = "starts from RANDOM weights"

# Seeds 1-8 (cold start and dwa), valid after 120 updates against untrained:
#   bi_dwa_loss falls 0.286 0.188 0.290 0.273 0.170 0.384 0.286 0.254 nat (mean 0.27, sd 0.07)
#   bi_dwa_acc gains   9.5  7.6  10.1  9.9  9.2  13.3  9.8  3.4 points (trained 17.4-22.9;
#   untrained 9.1-11.5, but 18.5 for seed 8: a random pointer can point well by chance)
#   (seed 1 before attention moved to SDPA: 0.177 and 10.9)
# the thresholds are about half the smallest gain measured
LOSS_GAIN = 0.08
ACC_GAIN = 1.5


@pytest.fixture(scope="module")
def dwa_run(pretrain_data, cold_start, tmp_path_factory):
    """120 dwa updates from the cold start: (save dir, fairseq-train output)."""
    save = tmp_path_factory.mktemp("dwa")
    args = pretrain_args(pretrain_data, save, "dwa", 120, "--restore-file", cold_start, *RESET)
    return save, run("fairseq-train", args)


@pytest.fixture(scope="module")
def untrained(pretrain_data, cold_start, tmp_path_factory):
    """The validation record of ``dwa_run``'s start: the same restore and seed (so the
    same random pointer), validated after one update at lr 1e-12."""
    save = tmp_path_factory.mktemp("dwa0")
    args = pretrain_args(
        pretrain_data, save, "dwa", 1, "--restore-file", cold_start, *RESET, "--no-save"
    )
    args[args.index("--lr") + 1] = "1e-12"
    return json_logs(run("fairseq-train", args).stdout, "valid")[-1]


def test_dwa_learns_from_a_cold_start(dwa_run, untrained):
    save, proc = dwa_run
    assert WARNING not in proc.stdout + proc.stderr
    assert "the pointer network starts random" in proc.stdout + proc.stderr
    records = json_logs(proc.stdout)
    first, last = records[0], records[-1]
    for term in ("mono_mlm", "bi_tlm", "bi_dwa"):
        assert f"{term}_loss" in first and f"{term}_acc" in first, term
    # the pointer network starts random: DWA must learn to point at the labels
    valid = json_logs(proc.stdout, "valid")[-1]
    assert valid["num_updates"] == 120 and untrained["num_updates"] == 1
    assert valid["bi_dwa_acc"] > untrained["bi_dwa_acc"] + ACC_GAIN, (valid, untrained)
    assert valid["bi_dwa_loss"] < untrained["bi_dwa_loss"] - LOSS_GAIN, (valid, untrained)
    # labels exist and are a minority of the masked tokens (high precision filtering)
    assert 1.0 < last["dwa_label_share"] < 100.0, records
    assert last["dwa_links_per_pair"] > 1.0, records
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
