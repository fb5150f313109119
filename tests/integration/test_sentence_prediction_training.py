"""fairseq-train --task veco_sentence_prediction from the ca_mlm cold start, plug-out
and plug-in, on the gettext translation-or-negative task; veco-sentence-eval's
zero-shot table (English-first training, German- and French-first test files).

Measured (700 updates, batch 16, 200 pairs = 400 examples per test file; chance 50):

    plug-out                   test_en 53.0   test_de 55.0   test_fr 50.2   (seeds 1-6: below)
    plug-out, one thread       test_en 53.0   test_de 56.0   test_fr 49.75  (make test's)
    plug-in, no translation    test_en 52.5   test_de 52.5   test_fr 50.2   (fallback)
    plug-in, with translation  test_en 92.0   test_de 89.5   test_fr 89.5

Plug-in's lead comes from this task's translations: the translation of (e_i, t_j) is
(t_i, e_j), so a positive's pair holds both of its sentences again and the
cross-attention only has to find copies. The plug-out numbers are what a 150-update
tiny cold start learns in 700 updates; they are barely above chance.
A longer pre-trained encoder (1000 ca_mlm updates) fine-tuned on 40000 examples for 2000
updates (slow) is well above chance: valid 63.8, test_en 65.0, test_de 66.0, test_fr 65.5.
"""

import glob
import json
import os

import pytest

from tests.helpers.refusals import ran, train_refused
from tests.helpers.runner import REPO, RESET, USER_DIR, env, json_logs, pretrain_args, run
from veco_plugin.cli import gettext_paraphrase, prepare_sentence_prediction

UPDATES = 700
# --max-positions of the cold start (veco_pretraining's 48 + 48)
MAX_POSITIONS = "96"
# Chance is 50 (balanced labels). Plug-out, fine-tuning seeds 1-6 from the seed-1 cold
# start (deterministic per seed; test_en holds 400 examples: 0.25 points each):
#   valid    57.5  57.0  59.0  57.8   58.5  58.0
#   test_en  53.0  52.5  53.0  53.25  55.5  52.75   (zero-shot, barely above chance)
# Thresholds: chance + half the smallest gain over it (was 52 for both: test_en cleared it
# by 2 examples with seed 2). Plug-in (slow): see the module docstring.
MIN_ACCURACY = {"out": 53.5, "out_test_en": 51.25, "in": 75.0}


def _paraphrase_data(pretrain_text, pretrain_data, tmp, max_train):
    """The gettext task's binarized splits (veco-gettext-paraphrase, then
    veco-prepare-sentence-prediction) with ``max_train`` En-De train pairs."""
    if not glob.glob("/usr/share/locale/fr/LC_MESSAGES/*.mo") or "gettext" not in pretrain_text:
        pytest.skip("no German/French gettext catalogs")
    fr = tmp / "gettext-en-fr"
    run("veco-gettext-corpus", ["--tgt-lang", "fr", "--output", fr, "--test-size", "300"])
    tsv = tmp / "tsv"  # the two other commands through their entry points, in this process
    ran(gettext_paraphrase, [
        "--corpus", f"de={pretrain_text}", "--corpus", f"fr={fr}", "--train-lang", "de",
        "--output", tsv, "--max-train", max_train, "--max-eval", "200", "--candidates", "1",
    ])  # fmt: skip
    splits = []
    for name in ("train", "valid", "test_en", "test_de", "test_fr"):
        splits += ["--split", f"{name}={tsv}/{name}.tsv,{tsv}/{name}.trans.tsv"]
    out = tmp / "bin"
    ran(prepare_sentence_prediction, [
        "--layout", "pawsx", "--spm-model", f"{pretrain_data}/spm.model",
        "--dict", f"{pretrain_data}/dict.txt", "--output", out, *splits,
    ])  # fmt: skip
    return out


@pytest.fixture(scope="module")
def paraphrase_data(pretrain_text, pretrain_data, tmp_path_factory):
    return _paraphrase_data(
        pretrain_text, pretrain_data, tmp_path_factory.mktemp("paraphrase"), 4000
    )


def finetune(data, cold_start, save_dir, mode, updates=UPDATES, lr="1e-3"):
    args = [
        data, "--user-dir", USER_DIR, "--task", "veco_sentence_prediction",
        "--plug-mode", mode, "--criterion", "veco_sentence_prediction", "--num-classes", "2",
        "--init-token", "0", "--separator-token", "2", "--max-positions", MAX_POSITIONS,
        "--shorten-method", "truncate", "--arch", "veco_tiny", "--restore-file", cold_start, *RESET,
        "--dropout", "0", "--attention-dropout", "0", "--cpu", "--optimizer", "adam",
        "--adam-betas", "(0.9,0.98)", "--lr", lr, "--lr-scheduler", "polynomial_decay",
        "--warmup-updates", "30", "--total-num-update", str(updates),
        "--max-update", str(updates), "--batch-size", "16", "--save-dir", save_dir,
        "--no-epoch-checkpoints", "--log-format", "json", "--log-interval", "50", "--seed", "1",
        "--num-workers", "0", "--validate-interval-updates", str(updates),
        "--best-checkpoint-metric", "x_accuracy", "--maximize-best-checkpoint-metric",
    ]  # fmt: skip
    # one thread, as make test gives each of its two workers (two would contend with the
    # other worker's job for the second core)
    proc = run("fairseq-train", args, env=env(OMP_NUM_THREADS="1"))
    return proc.stdout + proc.stderr


def zero_shot(data, save_dir, name, tmp_path):
    out = tmp_path / f"{name}.json"
    args = ["--data", data, "--checkpoint", f"{name}={save_dir}/checkpoint_last.pt", "--json", out]
    proc = run("veco-sentence-eval", args, cwd=REPO)
    print(proc.stdout)
    with open(out) as f:
        return json.load(f), proc.stderr


# plug-in needs 700 updates of the two-stream forward (10+ minutes on 2 busy cores): make
# test-slow runs it; its exactness ([H;S] at <s>, the fallback) is in the unit tests
@pytest.mark.parametrize("mode", ["out", pytest.param("in", marks=pytest.mark.slow)])
def test_finetune_above_chance(mode, paraphrase_data, cold_start, tmp_path):
    log = finetune(paraphrase_data, cold_start, tmp_path / mode, mode)
    valid = json_logs(log, "valid")[-1]
    table, stderr = zero_shot(paraphrase_data, tmp_path / mode, mode, tmp_path)
    scores = table[mode]
    print(mode, json.dumps(table))
    assert set(scores) == {"test_en", "test_de", "test_fr"}
    if mode == "out":
        assert valid["x_accuracy"] >= MIN_ACCURACY["out"]
        assert scores["test_en"] >= MIN_ACCURACY["out_test_en"]
    else:  # with translations; the fallback column is the zero-shot reading
        assert valid["x_accuracy"] >= MIN_ACCURACY["in"]
        assert table["in+tr"]["test_en"] >= MIN_ACCURACY["in"]
        assert "falling back to plug-out" in stderr
    assert os.path.exists(tmp_path / mode / "checkpoint_last.pt")


# The slow reading of "well above chance": a longer pre-trained encoder (1000 ca_mlm
# updates, positions up to the pairs' 96) and 5x the fine-tuning pairs. Measured: the
# cold start over-fits 8000 examples (train 70%, valid 57%) and stays at 57% with 40000.
PRETRAIN_UPDATES = 1000
LONG_UPDATES = 2000
WELL_ABOVE_CHANCE = 60.0  # measured: valid 63.8, test en/de/fr 65.0/66.0/65.5


@pytest.fixture(scope="module")
def pretrained(pretrain_data, tmp_path_factory):
    save = tmp_path_factory.mktemp("pretrained")
    args = pretrain_args(pretrain_data, save, "ca_mlm", PRETRAIN_UPDATES, "--disable-validation")
    run("fairseq-train", [*args, "--max-mono-positions", MAX_POSITIONS, "--clip-norm", "1.0"])
    return save / "checkpoint_last.pt"


@pytest.fixture(scope="module")
def large_paraphrase_data(pretrain_text, pretrain_data, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("paraphrase_large")
    return _paraphrase_data(pretrain_text, pretrain_data, tmp, 20000)


@pytest.mark.slow
def test_plug_out_from_a_longer_pretraining_is_well_above_chance(
    large_paraphrase_data, pretrained, tmp_path
):
    log = finetune(large_paraphrase_data, pretrained, tmp_path / "out", "out", LONG_UPDATES, "5e-4")
    valid = json_logs(log, "valid")[-1]
    table, _ = zero_shot(large_paraphrase_data, tmp_path / "out", "out", tmp_path)
    print("out", valid["x_accuracy"], json.dumps(table))
    assert valid["x_accuracy"] >= WELL_ABOVE_CHANCE
    assert table["out"]["test_en"] >= WELL_ABOVE_CHANCE


@pytest.mark.parametrize(
    "arch, what, fix",
    [
        ("veco_tiny", "does not fit this veco_tiny model", "pass the --max-positions it was "
         f"trained with, {MAX_POSITIONS}"),
        ("veco_base", "holds a veco_tiny model (--task veco_pretraining), this run builds "
         "veco_base", f"pass --arch veco_tiny and the --max-positions it was trained with, "
         f"{MAX_POSITIONS}"),
    ],
)  # fmt: skip
def test_restoring_with_other_max_positions_names_the_trained_one(
    paraphrase_data, cold_start, tmp_path, arch, what, fix
):
    """Another task (fine-tuning): the line names the sizes that differ and the
    --max-positions the checkpoint was trained with (was: 'holds a veco_tiny model, this
    run builds veco_tiny'), and its --arch where it is not this run's (was: the
    --max-positions alone, and the same line again once passed)."""
    args = [
        paraphrase_data, "--user-dir", USER_DIR, "--task", "veco_sentence_prediction",
        "--criterion", "veco_sentence_prediction", "--num-classes", "2",
        "--max-positions", "64", "--arch", arch, "--restore-file", cold_start,
        "--reset-optimizer", "--cpu", "--optimizer", "adam", "--lr", "1e-3",
        "--batch-size", "8", "--max-update", "1", "--save-dir", tmp_path, "--num-workers", "0",
    ]  # fmt: skip
    line = train_refused(args)
    assert line.startswith(f"fairseq-train: error: {cold_start} {what}")
    assert ("embed_positions" in line) == (arch == "veco_tiny") and line.endswith(fix), line
