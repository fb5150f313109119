"""What every fairseq-train run prints that is not the user's to act on, and how a missing
batch size ends (veco_plugin.warning_filters, veco_plugin.train_flags)."""

import os
import re

from tests.helpers.refusals import train_refused
from tests.helpers.runner import USER_DIR, json_logs, pretrain_args, run

AUTOCAST = "torch.cuda.amp.autocast(args...)` is deprecated"
MISMATCHED_MASKS = "Support for mismatched key_padding_mask and attn_mask is deprecated"


def test_two_updates_of_translation_print_no_python_warning(pretrain_data, tmp_path):
    """A 2-update ``translation_from_pretrained_veco`` run: fairseq's train_step makes the
    autocast call, fairseq's MultiheadAttention (where a model uses it) passes a float
    future mask beside a boolean padding mask, fairseq's configuration goes through
    hydra's deprecated API, its data loader asks for pinned memory on the CPU. Before the
    filters this printed 9 Python warnings; the plugin's own logged warnings stay."""
    args = [
        os.path.join(pretrain_data, "bi", "en-de"),
        "--user-dir", USER_DIR, "--task", "translation_from_pretrained_veco",
        "-s", "en", "-t", "de", "--arch", "veco_transformer_tiny", "--cpu",
        "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "1000", "--max-update", "2",
        "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
        "--save-dir", tmp_path / "ck", "--no-save", "--disable-validation",
        "--log-format", "json", "--log-interval", "1", "--num-workers", "0",
    ]  # fmt: skip
    proc = run("fairseq-train", args, cold=True)  # import-time warnings print only cold
    assert json_logs(proc.stdout, "train")[-1]["num_updates"] == 2
    output = proc.stdout + proc.stderr
    assert AUTOCAST not in output and MISMATCHED_MASKS not in output, proc.stderr[-3000:]
    assert not re.search(r"\w+Warning: ", output), proc.stderr[-3000:]


def test_no_batch_size_is_one_line_naming_the_flags(pretrain_data, tmp_path):
    args = pretrain_args(pretrain_data, tmp_path / "ck", "ca_mlm", 2)
    i = args.index("--max-tokens")
    last = train_refused(args[:i] + args[i + 2 :])
    assert last.startswith("fairseq-train: error: no batch size: pass --max-tokens N"), last
    assert "--batch-size N" in last
    assert not (tmp_path / "ck").exists()  # refused before fairseq made the save dir


def test_batch_size_zero_is_one_line(pretrain_data, tmp_path):
    """Was a hang: fairseq's assertion lets 0 through to batching."""
    args = pretrain_args(pretrain_data, tmp_path / "ck", "ca_mlm", 2, "--batch-size", "0")
    assert train_refused(args) == (
        "fairseq-train: error: --batch-size 0: pass a positive number of sentences per batch"
    )
