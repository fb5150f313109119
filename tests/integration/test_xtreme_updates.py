"""The updates ``veco-xtreme`` sizes the linear decay for are the updates fairseq-train makes:
its fine-tuning command (the udpos recipe on the published udpos excerpts) run by
fairseq-train for its epochs alone (no ``--max-update``), with ``--max-tokens`` (batches of
as many sentences as fit), with ``--update-freq``, and on 2 processes (torchrun, gloo): the
run's last update is the counted one, and the rate logged there is 0."""

import os
import re
import sys

import pytest

from tests.helpers.runner import REPO, run
from tests.helpers.slurm import free_ports
from veco_plugin.xtreme.models import describe, random_twin
from veco_plugin.xtreme.recipes import RECIPES
from veco_plugin.xtreme.stages import (
    UPDATES,
    Files,
    Settings,
    data_dir,
    finetune_command,
    prepare_command,
)
from veco_plugin.xtreme.updates import count_updates, parse_train_args

FIX = os.path.join(REPO, "tests/fixtures/udpos")
SENTENCES = 300  # of the excerpt's 1,000 training sentences: several batches an epoch each way
RECIPE = RECIPES["udpos"]


def settings(batch_size=32, update_freq=1, gpus=0, flags=()):
    return Settings(
        lr=1e-3, epochs=2, max_length=48, max_question=0, doc_stride=0, batch_size=batch_size,
        update_freq=update_freq, warmup_updates=0, weight_decay=0.0, seed=1, dropout=0.1,
        cpu=True, gpus=gpus, fairseq_flags=tuple(flags),
    )  # fmt: skip


@pytest.fixture(scope="module")
def row(pretrain_data, cold_start, tmp_path_factory):
    """A random-weights row of the cold start's shape, and its prepared udpos DATA (the
    first SENTENCES training sentences of the published excerpt)."""
    folder = tmp_path_factory.mktemp("pre")
    for name in ("dict.txt", "spm.model"):
        os.symlink(os.path.join(pretrain_data, name), folder / name)
    os.symlink(cold_start, folder / "model.pt")
    twin = random_twin(describe("cold", str(folder / "model.pt")))
    out = str(tmp_path_factory.mktemp("updates"))
    with open(f"{FIX}/train-en.excerpt.tsv", encoding="utf-8") as f:
        head = "\n\n".join(f.read().split("\n\n")[:SENTENCES]) + "\n\n"
    (folder / "train-en.tsv").write_text(head, encoding="utf-8")
    dev = f"{FIX}/dev-en.excerpt.tsv"
    files = Files((str(folder / "train-en.tsv"),), (dev,), {"en": (dev,)})
    command = prepare_command(RECIPE, twin, files, out, settings())
    run(os.path.basename(sys.executable), command[1:])
    return twin, out


def _epochs_alone(command):
    """The command without ``--max-update``: fairseq-train stops after ``--max-epoch``."""
    at = command.index("--max-update")
    return command[:at] + command[at + 2 :]


def _last_summary(output: str) -> str:
    return [line for line in output.splitlines() if re.search(r"\| train \| epoch \d+ \|", line)][
        -1
    ]


@pytest.mark.parametrize(
    "s, launch",
    [
        (settings(flags=("--max-tokens", "600")), 1),
        (settings(update_freq=2, flags=("--max-tokens", "600")), 1),
        (settings(gpus=2), 2),  # two processes: 16 sentences a process and update
    ],
    ids=["max-tokens", "update-freq", "2-processes"],
)
def test_the_decay_ends_at_the_last_update_fairseq_makes(row, s, launch, tmp_path):
    twin, out = row
    command = finetune_command(RECIPE, twin, data_dir(out, twin, None), str(tmp_path), s)
    command = [c for c in command if c != "--cpu"] + ["--cpu"]
    updates = count_updates(
        parse_train_args([a if a != UPDATES else "1" for a in command[3:]], "t"), launch
    )
    argv = [str(updates) if a == UPDATES else a for a in _epochs_alone(command)]
    argv += ["--save-dir", str(tmp_path / "ckpt")]
    if launch > 1:  # torchrun's two CPU processes (gloo), fairseq-train on each
        torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2"]
        argv = torchrun + ["--master-port", str(free_ports(1)[0]), "-m"] + argv[2:]
    proc = run(os.path.basename(argv[0]), argv[1:])
    summary = _last_summary(proc.stdout + proc.stderr)
    assert "| epoch 002 |" in summary, summary
    assert f"| num_updates {updates} |" in summary, summary
    assert "| lr 0 |" in summary, summary
