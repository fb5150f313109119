"""``veco-xtreme``'s commands: XTREME's recipe as the defaults of each task, the random row
without the checkpoint on its twin's DATA, and the updates the linear decay spans."""

import pytest

from veco_plugin.errors import VecoUserError
from veco_plugin.xtreme.models import Pretrained, random_twin
from veco_plugin.xtreme.recipes import RECIPES
from veco_plugin.xtreme.stages import UPDATES, Files, Settings, check_fairseq_flags, pipelines

ROW = Pretrained("veco", "pre/model.pt", "pre/spm.model", "pre/dict.txt", ("--arch", "x"), 512)
FILES = Files(("train.tsv",), ("dev.tsv",), {"en": ("en.tsv",), "de": ("de.tsv",)})


def settings(recipe, **changed):
    values = dict(
        lr=None, epochs=recipe.epochs, max_length=recipe.max_length,
        max_question=recipe.max_question, doc_stride=recipe.doc_stride,
        batch_size=recipe.batch_size, update_freq=1, warmup_updates=recipe.warmup_updates,
        weight_decay=recipe.weight_decay, seed=1, dropout=0.1, cpu=True, gpus=0,
    )  # fmt: skip
    return Settings(**{**values, **changed})


def _flag(command, name):
    return command[command.index(name) + 1]


@pytest.mark.parametrize(
    "task, lr, epochs, length, metric, every",
    [("udpos", "2e-05", "10", "128", "f1", "500"), ("panx", "2e-05", "10", "128", "f1", "1000"),
     ("xquad", "3e-05", "3", "384", None, None), ("mlqa", "3e-05", "3", "384", None, None),
     ("tydiqa", "3e-05", "3", "384", None, None),
     ("xnli", "2e-05", "5", "128", "x_accuracy", "100"),
     ("pawsx", "2e-05", "5", "128", "x_accuracy", "200")],
)  # fmt: skip
def test_xtreme_recipes_are_the_defaults(task, lr, epochs, length, metric, every):
    recipe = RECIPES[task]
    ((prepare, finetune, test),) = pipelines(recipe, [ROW], FILES, "out", settings(recipe))
    command = finetune.command
    assert _flag(command, "--lr") == lr and _flag(command, "--max-epoch") == epochs
    assert _flag(command, "--batch-size") == "32" and _flag(command, "--update-freq") == "1"
    assert _flag(command, "--optimizer") == "veco_adamw" and "--no-decay-bias-and-norm" in command
    assert _flag(command, "--lr-scheduler") == "polynomial_decay"
    assert _flag(command, "--end-learning-rate") == "0"
    assert _flag(command, "--total-num-update") == UPDATES == _flag(command, "--max-update")
    assert _flag(command, "--restore-file") == "pre/model.pt"
    assert _flag(command, "--max-positions") == "512"
    assert "--cpu" in command
    # XTREME's heads: dropout at the encoder's rate, none in QA's qa_outputs
    head_dropout = "0.0" if recipe.test_format == "squad" else "0.1"
    assert (
        _flag(command, "--pooler-dropout") == head_dropout and _flag(command, "--dropout") == "0.1"
    )
    # new random batches each epoch (RandomSampler); tied best checkpoints keep the first
    assert "--random-batches" in command and _flag(command, "--best-on-ties") == "earlier"
    if metric is None:  # QA: the model after the last epoch (train_qa.sh --save_steps -1)
        assert "--disable-validation" in command and "checkpoint_last.pt" in " ".join(test.command)
        assert "--no-last-checkpoints" not in command
    else:  # the best on English dev, every `every` updates and after the last
        assert _flag(command, "--best-checkpoint-metric") == metric
        assert "--maximize-best-checkpoint-metric" in command
        assert _flag(command, "--validate-interval-updates") == every
        assert _flag(command, "--save-interval-updates") == every
        assert _flag(command, "--validate-interval") == _flag(command, "--save-interval")
        assert int(_flag(command, "--validate-interval")) > int(epochs)  # no epoch-end checks
        assert "checkpoint_best.pt" in " ".join(test.command)
    # the scripts' lengths: MAX_LENGTH=128 (tagging), MAXL=128 (pairs), 384 (QA)
    assert _flag(prepare.command, "--max-length") == length
    if recipe.test_format == "tsv":  # sentence pairs: the tests binarized too
        assert "test_de=de.tsv" in prepare.command and "--splits" in test.command
    if recipe.test_format == "squad":
        assert _flag(prepare.command, "--doc-stride") == "128"
        assert _flag(prepare.command, "--max-question") == "64"
        assert _flag(command, "--warmup-updates") == "500"
        assert _flag(command, "--weight-decay") == "0.0001"
        assert "--fp16-no-flatten-grads" in command  # the no-decay marks survive --bf16
        rules = {"xquad": "squad", "mlqa": "mlqa", "tydiqa": "squad"}[task]
        assert _flag(test.command, "--normalisation") == rules


def test_xnli_for_a_large_model_is_xtremes_large_recipe():
    """train_xnli.sh: lr 3e-5 for XLM-R large (2e-5 for base); --lr wins."""
    large = Pretrained(
        "xlmr", "l.pt", "s", "d", ("--arch", "veco_large", "--encoder-embed-dim", "1024"), 512
    )
    recipe = RECIPES["xnli"]
    for row, s, lr in ((large, settings(recipe), "3e-05"), (ROW, settings(recipe), "2e-05"),
                       (large, settings(recipe, lr=1e-5), "1e-05")):  # fmt: skip
        ((_, finetune, _),) = pipelines(recipe, [row], FILES, "out", s)
        assert _flag(finetune.command, "--lr") == lr
    ((_, finetune, _),) = pipelines(RECIPES["pawsx"], [large], FILES, "out", settings(recipe))
    assert _flag(finetune.command, "--lr") == "2e-05"


@pytest.mark.parametrize(
    "batch, freq, gpus, per_process", [(32, 1, 0, 32), (32, 4, 0, 8), (32, 1, 8, 4), (32, 2, 8, 2)]
)
def test_the_batch_is_the_examples_of_an_update_over_all_processes(batch, freq, gpus, per_process):
    """XTREME's 32 examples an update, whatever the launch: on 8 GPUs each process reads 4."""
    s = settings(RECIPES["xquad"], batch_size=batch, update_freq=freq, gpus=gpus)
    ((_, finetune, _),) = pipelines(RECIPES["xquad"], [ROW], FILES, "out", s)
    assert _flag(finetune.command, "--batch-size") == str(per_process)
    assert _flag(finetune.command, "--update-freq") == str(freq)


def test_a_batch_that_does_not_divide_over_the_processes_is_refused():
    s = settings(RECIPES["udpos"], batch_size=32, gpus=3)
    with pytest.raises(
        VecoUserError, match=r"--batch-size 32 .* 3 process\(es\) x --update-freq 1"
    ):
        s.step_batch


@pytest.mark.parametrize(
    "extra, refused",
    [((), None), (("--bf16", "--max-tokens", "8192"), None),
     (("--no-such-flag",), "unrecognized arguments: --no-such-flag"),
     (("--max-tokens", "many"), "argument --max-tokens: invalid int value: 'many'")],
)  # fmt: skip
def test_fairseq_trains_own_parser_checks_the_pass_through_flags(extra, refused):
    """Before any work: a flag after -- that fairseq-train refuses is one line, its own."""
    row = Pretrained("veco", "pre/model.pt", "s", "d", ("--arch", "veco_tiny"), 64)
    recipe = RECIPES["udpos"]
    s = settings(recipe, fairseq_flags=extra)
    ((_, finetune, _),) = pipelines(recipe, [row], FILES, "out", s)
    if refused is None:
        check_fairseq_flags(finetune.command)
        return
    with pytest.raises(VecoUserError) as error:
        check_fairseq_flags(finetune.command)
    assert str(error.value) == (
        f"the fairseq-train flags after --: fairseq-train refuses them: {refused}"
    )


def test_the_random_row_runs_after_its_twin_on_its_data():
    recipe = RECIPES["udpos"]
    rows = [ROW, random_twin(ROW)]
    (stages,) = pipelines(recipe, rows, FILES, "out", settings(recipe))
    names = [s.name for s in stages]
    assert names == ["prepare-veco", "finetune-veco", "test-veco", "finetune-random", "test-random"]
    random = stages[3].command
    assert "--restore-file" not in random and "out/veco/data" in random
    assert random[random.index("--arch") :][:2] == ["--arch", "x"]


def test_pipelines_side_by_side_parse_their_commands_at_once():
    """--jobs 2 runs two fine-tuning stages' bodies in threads, each reading its command with
    fairseq's parser (hydra's global state): before the lock, one failed with 'GlobalHydra
    is already initialized' (veco-derived-transfer's smoke run, a fresh clone's CI)."""
    import threading

    from veco_plugin.xtreme.updates import parse_train_args

    row = Pretrained("veco", "pre/model.pt", "s", "d", ("--arch", "veco_tiny"), 64)
    recipe = RECIPES["udpos"]
    ((_, finetune, _),) = pipelines(recipe, [row], FILES, "out", settings(recipe))
    argv = ["1" if a == UPDATES else a for a in finetune.command[3:]]
    errors = []

    def parse():
        for _ in range(3):
            try:
                parse_train_args(argv, "t")
            except Exception as exc:  # the failure is what the test reports
                errors.append(repr(exc))

    threads = [threading.Thread(target=parse) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[:2]


def test_a_save_dir_is_continued_by_its_own_command_and_emptied_for_any_other(tmp_path):
    """``resumable``'s claim: the save dir of an interrupted run of the same command is
    kept (fairseq then resumes its checkpoint_last.pt); one another command left, or none
    claimed, is emptied and claimed (the run starts from 0)."""
    import io
    import json

    from veco_plugin.pipeline.runner import Console, Runner, Stage
    from veco_plugin.xtreme.stages import resumable

    for sub in ("stamps", "logs"):
        (tmp_path / sub).mkdir()
    save = tmp_path / "save"
    stage = Stage("pretrain", ["sh", "-c", f"ls {save} > {tmp_path}/seen"], resumable(str(save)))
    console = io.StringIO()
    runner = Runner(str(tmp_path), 1, Console("t", console, io.StringIO()), "--force")

    def rerun(owner):
        (tmp_path / "stamps" / "pretrain.done").unlink(missing_ok=True)
        save.mkdir(exist_ok=True)
        (save / "checkpoint_last.pt").write_text("x")
        (save / "command.json").unlink(missing_ok=True)
        if owner is not None:
            (save / "command.json").write_text(json.dumps(owner))
        console.seek(0)
        console.truncate()
        runner.run_stage(stage)
        assert json.loads((save / "command.json").read_text()) == stage.command
        return (tmp_path / "seen").read_text().split(), console.getvalue()

    seen, said = rerun(stage.command)
    assert seen == ["checkpoint_last.pt", "command.json"]
    assert f"continuing the interrupted run in {save}" in said
    for owner in (["another"], None):
        seen, said = rerun(owner)
        assert seen == ["command.json"] and "continuing" not in said
