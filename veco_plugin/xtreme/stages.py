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
finished one is skipped (:mod:`..pipeline.runner`'s stamps, OUT/stamps).
The learning rate decays linearly to 0 over ``--total-num-update``, and ``--max-update``
ends the run there: the updates fairseq-train will make, counted from the batches its
sampler builds once DATA is written (:mod:`.updates`; the command's ``UPDATES``
placeholder). ``--batch-size`` is the examples of one update over all processes: each
process's batch is that divided by the processes and ``--update-freq``.
"""

import json
import os
import shutil
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

from ..errors import VecoUserError
from ..pipeline.runner import Stage
from .models import Pretrained
from .recipes import Recipe
from .updates import count_updates, parse_train_args

if TYPE_CHECKING:
    from ..pipeline.runner import StageContext

USER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UPDATES = "UPDATES"  # --total-num-update, filled in once DATA holds the train split
TRAIN, VALID = "train", "valid"


@dataclass(frozen=True)
class Settings:
    """The fine-tuning settings (the recipe's unless a flag changed them)."""

    lr: Optional[float]
    """None: the recipe's for the row's size (:meth:`..recipes.Recipe.lr_for`)."""
    epochs: int
    max_length: int
    max_question: int
    doc_stride: int
    batch_size: int
    """examples an update, over all processes."""
    update_freq: int
    warmup_updates: int
    weight_decay: float
    seed: int
    dropout: float
    cpu: bool
    gpus: int
    fairseq_flags: Tuple[str, ...] = ()

    @property
    def processes(self) -> int:
        """fairseq-train's data-parallel processes: one per GPU, else one."""
        return max(self.gpus, 1)

    @property
    def step_batch(self) -> int:
        """Each process's batch: ``batch_size / (processes x update_freq)``."""
        parts = self.processes * self.update_freq
        if self.batch_size % parts:
            raise VecoUserError(
                f"--batch-size {self.batch_size} (examples an update) does not divide over "
                f"{self.processes} process(es) x --update-freq {self.update_freq}: give a "
                f"multiple of {parts}"
            )
        return self.batch_size // parts


@dataclass(frozen=True)
class Files:
    train: Tuple[str, ...]
    dev: Tuple[str, ...]
    tests: Dict[str, Tuple[str, ...]]
    data: str = ""
    """BUCC: XTREME's bucc2018 folder (each language's files found there)."""


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
        if recipe.test_format == "tsv":  # XNLI-1.0's files hold every language
            lang = name[len("test_") :] if name.startswith("test_") else "en"
            command += ["--language", f"{name}={lang}"]
    return command + ["--output", data_dir(out, row, None)]


def _task_flags(recipe: Recipe, positions: int) -> List[str]:
    flags = ["--task", recipe.fairseq_task, "--criterion", recipe.fairseq_task]
    flags += ["--max-positions", str(positions)]
    if recipe.classes:
        flags += ["--num-classes", str(recipe.classes), "--init-token", "0"]
        flags += ["--separator-token", "2", "--shorten-method", "truncate"]
    return flags


NEVER = "1000000"  # an epoch interval no run reaches: no epoch-end validation or save


def _keep_flags(recipe: Recipe) -> List[str]:
    """Which checkpoint the run leaves (:attr:`Recipe.keep`): the model after the last
    update, or the best on English dev, scored every ``validate_updates`` updates and
    after the last (fairseq validates and saves when ``--max-update`` stops it)."""
    if recipe.keep == "last":
        return ["--disable-validation", "--save-interval", NEVER, "--no-epoch-checkpoints"]
    flags = ["--best-checkpoint-metric", recipe.best_metric, "--no-epoch-checkpoints"]
    flags.append("--no-last-checkpoints")
    if recipe.maximize:
        flags.append("--maximize-best-checkpoint-metric")
    if recipe.validate_updates:
        every = str(recipe.validate_updates)
        flags += ["--validate-interval-updates", every, "--save-interval-updates", every]
        flags += ["--keep-interval-updates", "1", "--validate-interval", NEVER]
        flags += ["--save-interval", NEVER]
    return flags


def finetune_command(recipe: Recipe, row: Pretrained, data: str, out: str, s: Settings):
    """fairseq-train from ``row`` (random weights when it has no path), as XTREME's scripts
    fine-tune: its heads dropping out at the encoder's rate (QA's not at all:
    :attr:`Recipe.head_dropout`), new random batches each epoch (``--random-batches``), the
    first of tied best checkpoints kept (``--best-on-ties earlier``)."""
    command = _python("fairseq_cli.train") + [data, "--user-dir", USER_DIR]
    command += _task_flags(recipe, row.positions) + list(row.model_flags)
    if row.path:
        command += ["--restore-file", row.path, "--reset-optimizer", "--reset-dataloader"]
        command += ["--reset-meters", "--reset-lr-scheduler"]
    lr = recipe.lr_for(row.large) if s.lr is None else s.lr
    command += [
        "--optimizer", "veco_adamw", "--adam-betas", "(0.9,0.999)", "--adam-eps", "1e-8",
        "--weight-decay", str(s.weight_decay), "--no-decay-bias-and-norm", "--clip-norm", "1.0",
        "--lr", str(lr), "--lr-scheduler", "polynomial_decay", "--power", "1",
        "--end-learning-rate", "0", "--warmup-updates", str(s.warmup_updates),
        "--total-num-update", UPDATES, "--max-update", UPDATES,
        "--batch-size", str(s.step_batch), "--update-freq", str(s.update_freq),
        "--max-epoch", str(s.epochs), "--required-batch-size-multiple", "1",
        "--dropout", str(s.dropout), "--attention-dropout", str(s.dropout),
        "--pooler-dropout", str(s.dropout if recipe.head_dropout else 0.0),
        "--random-batches", "--best-on-ties", "earlier",
        "--save-dir", os.path.join(out, row.name, "checkpoints"),
        "--find-unused-parameters", "--seed", str(s.seed),
        "--log-format", "simple", "--log-interval", "50", "--num-workers", "0",
    ]  # fmt: skip
    if s.weight_decay > 0:  # --fp16/--bf16 keep the parameters' no-decay marks
        command.append("--fp16-no-flatten-grads")
    command += _keep_flags(recipe)
    if s.cpu:
        command.append("--cpu")
    return command + list(s.fairseq_flags)


def parsed_command(command: Sequence[str], where: str):
    """A :func:`finetune_command` (after ``python -m fairseq_cli.train``) read by
    fairseq-train's parser, the ``UPDATES`` placeholder standing for any count."""
    return parse_train_args(["1" if a == UPDATES else a for a in command[3:]], where)


def check_fairseq_flags(command: Sequence[str]) -> None:
    """fairseq-train's parser reads ``command`` now, before any work: a flag after ``--``
    that it refuses is one line."""
    parsed_command(command, "the fairseq-train flags after --")


def kept_checkpoint(recipe: Recipe, out: str, name: str) -> str:
    """The checkpoint the test stage scores (:attr:`Recipe.keep`)."""
    kept = "checkpoint_last.pt" if recipe.keep == "last" else "checkpoint_best.pt"
    return os.path.join(out, name, "checkpoints", kept)


def scores_path(out: str, name: str) -> str:
    return os.path.join(out, name, "scores.json")


def retrieval_command(recipe: Recipe, row: Pretrained, files: Files, out: str, s: Settings):
    """The pre-trained checkpoint scored as it is (XTREME's retrieval protocol)."""
    assert row.path is not None
    command = _python(recipe.evaluate) + ["--checkpoint", f"{row.name}={row.path}"]
    command += ["--spm-model", row.spm_model, "--dict", row.dictionary]
    if files.data:
        command += ["--data", files.data]
    for lang, paths in files.tests.items():
        command += ["--test", f"{lang}={','.join(paths)}" if paths else lang]
    command += ["--predictions", os.path.join(out, row.name, "predictions")]
    if s.cpu:
        command.append("--cpu")
    return command + ["--json", scores_path(out, row.name)]


def test_command(recipe: Recipe, row: Pretrained, files: Files, data: str, out: str):
    command = _python(recipe.evaluate) + ["--data", data]
    command += ["--checkpoint", f"{row.name}={kept_checkpoint(recipe, out, row.name)}"]
    if recipe.test_format == "tsv":
        command += ["--splits", ",".join(f"test_{lang}" for lang in files.tests)]
    else:
        for lang, paths in files.tests.items():
            command += ["--test", f"{lang}={','.join(paths)}"]
        command += ["--predictions", os.path.join(out, row.name, "predictions")]
    if recipe.normalisation:  # XTREME: SQuAD v1.1's script for XQuAD and TyDiQA, MLQA's
        command += ["--normalisation", recipe.normalisation]
    return command + ["--json", scores_path(out, row.name)]


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


def claim(ctx: "StageContext", save_dir: str, command: Optional[Sequence[str]] = None) -> None:
    """Make ``save_dir`` the stage's: kept when ``save_dir/command.json`` holds ``command``
    (default: the stage's; an interrupted run of it continues), else emptied and claimed."""
    owner = os.path.join(save_dir, "command.json")
    command = list(ctx.stage.command if command is None else command)
    try:
        with open(owner, encoding="utf-8") as f:
            ours = json.load(f) == command
    except (OSError, ValueError):
        ours = False
    if ours:
        ctx.echo(f"continuing the interrupted run in {save_dir}")
        return
    remove(save_dir)
    os.makedirs(save_dir)
    with open(owner, "w", encoding="utf-8") as f:
        json.dump(command, f)


def resumable(save_dir: str):
    """A stage body for a ``fairseq-train`` that saves into ``save_dir``: an interrupted
    run of the same command continues (fairseq resumes from ``checkpoint_last.pt``); a
    ``save_dir`` left by another command, or by none, is removed first (:func:`claim`)."""

    def body(ctx: "StageContext") -> None:
        claim(ctx, save_dir)
        ctx.run(ctx.stage.command, ctx.stage.env, show=False)  # the runner showed it

    return body


def finetune_body(save_dir: str, s: Settings):
    """Count the run's updates (:func:`.updates.count_updates`), then run it."""

    def body(ctx: "StageContext") -> None:
        remove(save_dir)
        updates = count_updates(parsed_command(ctx.stage.command, ctx.stage.name), s.processes)
        ctx.echo(
            f"{UPDATES} = {updates}: {s.epochs} epochs of the batches fairseq's sampler "
            f"builds, {s.processes} process(es) x --batch-size {s.step_batch} x --update-freq "
            f"{s.update_freq} = {s.batch_size} examples an update at most"
        )
        ctx.run([str(updates) if a == UPDATES else a for a in ctx.stage.command])

    return body


def _outputs(out: str, row: Pretrained):
    """The test stage's body: its scores and predictions removed, its command run."""
    return fresh(scores_path(out, row.name), os.path.join(out, row.name, "predictions"))


def pipelines(
    recipe: Recipe, rows: Sequence[Pretrained], files: Files, out: str, s: Settings
) -> List[List[Stage]]:
    """One pipeline per row; the random row (no path) runs after the row it copies, on
    that row's DATA."""
    if not recipe.finetune:
        return [
            [Stage(f"test-{r.name}", retrieval_command(recipe, r, files, out, s), _outputs(out, r))]
            for r in rows
        ]
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
        stages.append(Stage(f"finetune-{row.name}", finetune, finetune_body(save_dir, s)))
        test = test_command(recipe, row, files, data, out)
        stages.append(Stage(f"test-{row.name}", test, body=_outputs(out, row)))
        if twin is not None:
            by_name[twin.name] += stages
        else:
            by_name[row.name] = stages
    return list(by_name.values())
