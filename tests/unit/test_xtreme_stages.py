"""``veco-xtreme``'s commands: XTREME's recipe as the defaults of each task, the random row
without the checkpoint on its twin's DATA, and the updates the linear decay spans."""

import pytest

from veco_plugin.xtreme.models import Pretrained, random_twin
from veco_plugin.xtreme.recipes import RECIPES
from veco_plugin.xtreme.stages import UPDATES, Files, Settings, pipelines, total_updates

ROW = Pretrained("veco", "pre/model.pt", "pre/spm.model", "pre/dict.txt", ("--arch", "x"), 512)
FILES = Files(("train.tsv",), ("dev.tsv",), {"en": ("en.tsv",), "de": ("de.tsv",)})


def settings(recipe, **changed):
    values = dict(
        lr=recipe.lr, epochs=recipe.epochs, max_length=recipe.max_length,
        max_question=recipe.max_question, doc_stride=recipe.doc_stride,
        batch_size=recipe.batch_size, update_freq=1, warmup_updates=recipe.warmup_updates,
        weight_decay=recipe.weight_decay, seed=1, dropout=0.1, cpu=True, gpus=0,
    )  # fmt: skip
    return Settings(**{**values, **changed})


def _flag(command, name):
    return command[command.index(name) + 1]


@pytest.mark.parametrize(
    "task, lr, epochs, length, metric",
    [("udpos", "2e-05", "10", "128", "accuracy"), ("xquad", "3e-05", "3", "384", "loss"),
     ("xnli", "2e-05", "5", None, "accuracy"), ("pawsx", "2e-05", "5", None, "accuracy")],
)  # fmt: skip
def test_xtreme_recipes_are_the_defaults(task, lr, epochs, length, metric):
    recipe = RECIPES[task]
    ((prepare, finetune, test),) = pipelines(recipe, [ROW], FILES, "out", settings(recipe))
    assert (
        _flag(finetune.command, "--lr") == lr and _flag(finetune.command, "--max-epoch") == epochs
    )
    assert _flag(finetune.command, "--batch-size") == "32"
    assert _flag(finetune.command, "--lr-scheduler") == "polynomial_decay"
    assert _flag(finetune.command, "--end-learning-rate") == "0"
    assert _flag(finetune.command, "--total-num-update") == UPDATES
    assert _flag(finetune.command, "--best-checkpoint-metric") == metric
    assert ("--maximize-best-checkpoint-metric" in finetune.command) == (metric != "loss")
    assert _flag(finetune.command, "--restore-file") == "pre/model.pt"
    assert _flag(finetune.command, "--max-positions") == "512"
    assert "--cpu" in finetune.command
    if length:
        assert _flag(prepare.command, "--max-length") == length
    else:  # sentence pairs: cut at the model's positions; the tests binarized too
        assert "--max-length" not in prepare.command
        assert "test_de=de.tsv" in prepare.command and "--splits" in test.command
    if task == "xquad":
        assert _flag(prepare.command, "--doc-stride") == "128"
        assert _flag(prepare.command, "--max-question") == "64"
        assert _flag(finetune.command, "--warmup-updates") == "500"


def test_the_random_row_runs_after_its_twin_on_its_data():
    recipe = RECIPES["udpos"]
    rows = [ROW, random_twin(ROW)]
    (stages,) = pipelines(recipe, rows, FILES, "out", settings(recipe))
    names = [s.name for s in stages]
    assert names == ["prepare-veco", "finetune-veco", "test-veco", "finetune-random", "test-random"]
    random = stages[3].command
    assert "--restore-file" not in random and "out/veco/data" in random
    assert random[random.index("--arch") :][:2] == ["--arch", "x"]


@pytest.mark.parametrize(
    "windows, batch, freq, gpus, epochs, updates",
    [(1000, 32, 1, 0, 10, 320), (1000, 32, 2, 0, 3, 48), (1000, 32, 1, 2, 1, 16),
     (32, 32, 1, 0, 2, 2)],
)  # fmt: skip
def test_updates_of_the_linear_decay(windows, batch, freq, gpus, epochs, updates):
    s = settings(RECIPES["udpos"], batch_size=batch, update_freq=freq, gpus=gpus, epochs=epochs)
    assert total_updates(windows, s) == updates
