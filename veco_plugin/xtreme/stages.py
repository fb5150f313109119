"""``veco-xtreme``'s stages: the exact commands, one pipeline per row of the table.

==================  =======================================================================
prepare-<name>      the task's prepare command (``veco-prepare-tagging``, ``-span-qa``,
                    ``-sentence-prediction``) with the row's vocabulary -> OUT/<name>/data;
                    the random-initialization row shares its twin's
finetune-<name>     ``fairseq-train`` on English train, validated on English dev, the best
                    checkpoint kept -> OUT/<name>/checkpoints/checkpoint_best.pt
test-<name>         the task's scorer on every test language -> OUT/<name>/scores.json (and
                    OUT/<name>/predictions/)
==================  =======================================================================

A stage that did not finish starts again from nothing (its output is removed first); a
finished one is skipped (:mod:`..quickstart.scheduler`'s stamps, OUT/stamps).
The learning rate decays linearly to 0 over ``--total-num-update``: the epochs times the
updates an epoch makes, known once DATA is written (the command's ``UPDATES`` placeholder).
"""

import json
import math
import os
import shutil
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

from ..quickstart.scheduler import Stage
from .models import Pretrained
from .recipes import Recipe

if TYPE_CHECKING:
    from ..quickstart.scheduler import StageContext

USER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UPDATES = "UPDATES"  # --total-num-update, filled in once DATA holds the train split
TRAIN, VALID = "train", "valid"


@dataclass(frozen=True)
class Settings:
    """The fine-tuning settings (the recipe's unless a flag changed them)."""

    lr: float
    epochs: int
    max_length: int
    max_question: int
    doc_stride: int
    batch_size: int
    update_freq: int
    warmup_updates: int
    weight_decay: float
    seed: int
    dropout: float
    cpu: bool
    gpus: int
    fairseq_flags: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Files:
    train: Tuple[str, ...]
    dev: Tuple[str, ...]
    tests: Dict[str, Tuple[str, ...]]


def _python(module: str) -> List[str]:
    return [sys.executable, "-m", module]


def data_dir(out: str, row: Pretrained, twin: Optional[Pretrained]) -> str:
    return os.path.join(out, (twin or row).name, "data")


def prepare_command(recipe: Recipe, row: Pretrained, files: Files, out: str, s: Settings):
    splits = {TRAIN: files.train, VALID: files.dev}
    if recipe.test_format == "tsv":  # the sentence scorer reads binarized splits
        splits.update({f"test_{lang}": paths for lang, paths in files.tests.items()})
    command = _python(recipe.prepare) + ["--spm-model", row.spm_model, "--dict", row.dictionary]
    if recipe.layout:
        command += ["--layout", recipe.layout]
    if recipe.max_length:
        command += ["--max-length", str(s.max_length)]
    if recipe.doc_stride:
        command += ["--max-question", str(s.max_question), "--doc-stride", str(s.doc_stride)]
    for name, paths in splits.items():
        command += ["--split", f"{name}={','.join(paths)}"]
    return command + ["--output", data_dir(out, row, None)]


def _task_flags(recipe: Recipe, positions: int) -> List[str]:
    flags = ["--task", recipe.fairseq_task, "--criterion", recipe.fairseq_task]
    flags += ["--max-positions", str(positions)]
    if recipe.classes:
        flags += ["--num-classes", str(recipe.classes), "--init-token", "0"]
        flags += ["--separator-token", "2", "--shorten-method", "truncate"]
    return flags


def finetune_command(recipe: Recipe, row: Pretrained, data: str, out: str, s: Settings):
    """fairseq-train from ``row`` (random weights when it has no path)."""
    command = _python("fairseq_cli.train") + [data, "--user-dir", USER_DIR]
    command += _task_flags(recipe, row.positions) + list(row.model_flags)
    if row.path:
        command += ["--restore-file", row.path, "--reset-optimizer", "--reset-dataloader"]
        command += ["--reset-meters", "--reset-lr-scheduler"]
    command += [
        "--optimizer", "adam", "--adam-betas", "(0.9,0.999)", "--adam-eps", "1e-8",
        "--weight-decay", str(s.weight_decay), "--clip-norm", "1.0",
        "--lr", str(s.lr), "--lr-scheduler", "polynomial_decay", "--power", "1",
        "--end-learning-rate", "0", "--warmup-updates", str(s.warmup_updates),
        "--total-num-update", UPDATES,
        "--batch-size", str(s.batch_size), "--update-freq", str(s.update_freq),
        "--max-epoch", str(s.epochs), "--required-batch-size-multiple", "1",
        "--dropout", str(s.dropout), "--attention-dropout", str(s.dropout),
        "--best-checkpoint-metric", recipe.best_metric,
        "--no-epoch-checkpoints", "--no-last-checkpoints",
        "--save-dir", os.path.join(out, row.name, "checkpoints"),
        "--find-unused-parameters", "--seed", str(s.seed),
        "--log-format", "simple", "--log-interval", "50", "--num-workers", "0",
    ]  # fmt: skip
    if recipe.maximize:
        command.append("--maximize-best-checkpoint-metric")
    if s.cpu:
        command.append("--cpu")
    return command + list(s.fairseq_flags)


def best_checkpoint(out: str, name: str) -> str:
    return os.path.join(out, name, "checkpoints", "checkpoint_best.pt")


def scores_path(out: str, name: str) -> str:
    return os.path.join(out, name, "scores.json")


def test_command(recipe: Recipe, row: Pretrained, files: Files, data: str, out: str):
    command = _python(recipe.evaluate) + ["--data", data]
    command += ["--checkpoint", f"{row.name}={best_checkpoint(out, row.name)}"]
    if recipe.test_format == "tsv":
        command += ["--splits", ",".join(f"test_{lang}" for lang in files.tests)]
    else:
        for lang, paths in files.tests.items():
            command += ["--test", f"{lang}={','.join(paths)}"]
        command += ["--predictions", os.path.join(out, row.name, "predictions")]
    if recipe.test_format == "squad":  # XTREME scores XQuAD with SQuAD v1.1's script
        command += ["--normalisation", "squad"]
    return command + ["--json", scores_path(out, row.name)]


def train_windows(data: str) -> int:
    """The examples (windows) of DATA's train split."""
    from fairseq.data import data_utils

    dataset = data_utils.load_indexed_dataset(os.path.join(data, "input0", TRAIN), None)
    return len(dataset)


def total_updates(windows: int, s: Settings) -> int:
    """The updates of ``s.epochs`` epochs: each update reads ``batch x update_freq``
    windows on each of ``gpus`` processes (fairseq's last, smaller batch included)."""
    batches = math.ceil(windows / (s.batch_size * max(s.gpus, 1)))
    return s.epochs * math.ceil(batches / s.update_freq)


def fresh(*paths: str):
    """A stage body that removes an unfinished stage's output, then runs its command."""

    def body(ctx: "StageContext") -> None:
        remove(*paths)
        ctx.run(ctx.stage.command, show=False)  # the runner showed it

    return body


def remove(*paths: str) -> None:
    """Each of ``paths``, a directory (whole) or a file, where it exists."""
    for path in paths:
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)


def resumable(save_dir: str):
    """A stage body for a ``fairseq-train`` that saves into ``save_dir``: an interrupted
    run of the same command continues (fairseq resumes from ``checkpoint_last.pt``); a
    ``save_dir`` left by another command, or by none, is removed first.
    ``save_dir/command.json`` holds the command that owns it."""

    def body(ctx: "StageContext") -> None:
        owner = os.path.join(save_dir, "command.json")
        command = list(ctx.stage.command)
        try:
            with open(owner, encoding="utf-8") as f:
                ours = json.load(f) == command
        except (OSError, ValueError):
            ours = False
        if ours:
            ctx.echo(f"continuing the interrupted run in {save_dir}")
        else:
            remove(save_dir)
            os.makedirs(save_dir)
            with open(owner, "w", encoding="utf-8") as f:
                json.dump(command, f)
        ctx.run(command, show=False)  # the runner showed it

    return body


def finetune_body(data: str, save_dir: str, s: Settings):
    def body(ctx: "StageContext") -> None:
        remove(save_dir)
        updates = total_updates(train_windows(data), s)
        ctx.echo(f"{UPDATES} = {updates} ({s.epochs} epochs)")
        ctx.run([str(updates) if a == UPDATES else a for a in ctx.stage.command])

    return body


def pipelines(
    recipe: Recipe, rows: Sequence[Pretrained], files: Files, out: str, s: Settings
) -> List[List[Stage]]:
    """One pipeline per row; the random row (no path) runs after the row it copies, on
    that row's DATA."""
    twins = {row.name: rows[0] for row in rows if row.path is None}
    by_name: Dict[str, List[Stage]] = {}
    for row in rows:
        twin = twins.get(row.name)
        data = data_dir(out, row, twin)
        stages = []
        if twin is None:
            prepare = prepare_command(recipe, row, files, out, s)
            stages.append(Stage(f"prepare-{row.name}", prepare, body=fresh(data)))
        finetune = finetune_command(recipe, row, data, out, s)
        save_dir = os.path.join(out, row.name, "checkpoints")
        stages.append(Stage(f"finetune-{row.name}", finetune, finetune_body(data, save_dir, s)))
        test = test_command(recipe, row, files, data, out)
        outputs = (scores_path(out, row.name), os.path.join(out, row.name, "predictions"))
        stages.append(Stage(f"test-{row.name}", test, body=fresh(*outputs)))
        if twin is not None:
            by_name[twin.name] += stages
        else:
            by_name[row.name] = stages
    return list(by_name.values())
