"""fairseq-train --task veco_sentence_prediction from the ca_mlm cold start, plug-out
and plug-in, on the gettext translation-or-negative task; veco-sentence-eval's
zero-shot table (English-first training, German- and French-first test files).

Measured (700 updates, batch 16, 200 pairs = 400 examples per test file; chance 50):

    plug-out                   test_en 54.5   test_de 55.8   test_fr 50.0
    plug-in, no translation    test_en 52.5   test_de 52.5   test_fr 50.2   (fallback)
    plug-in, with translation  test_en 92.0   test_de 89.5   test_fr 89.5

Plug-in's lead comes from this task's translations: the translation of (e_i, t_j) is
(t_i, e_j), so a positive's pair holds both of its sentences again and the
cross-attention only has to find copies. The plug-out numbers are what a 150-update
tiny cold start learns in 700 updates; they are barely above chance.
"""

import glob
import json
import os
import subprocess
import sys

import pytest

from tests.helpers.runner import REPO, USER_DIR, env, json_logs, run

UPDATES = 700
# --max-positions of the cold start (veco_pretraining's 48 + 48)
MAX_POSITIONS = "96"
# chance is 50 (balanced labels); measured: see the module docstring
MIN_ACCURACY = {"out": 52.0, "in": 75.0}


@pytest.fixture(scope="module")
def paraphrase_data(pretrain_text, pretrain_data, tmp_path_factory):
    if not glob.glob("/usr/share/locale/fr/LC_MESSAGES/*.mo") or "gettext" not in pretrain_text:
        pytest.skip("no German/French gettext catalogs")
    tmp = tmp_path_factory.mktemp("paraphrase")
    fr = tmp / "gettext-en-fr"
    run("veco-gettext-corpus", ["--tgt-lang", "fr", "--output", fr, "--test-size", "300"])
    tsv = tmp / "tsv"
    python = [sys.executable, "-m"]

    def module(name, *args):
        subprocess.run(python + [name, *map(str, args)], check=True, env=env(), cwd=REPO)

    module(
        "veco_plugin.cli.gettext_paraphrase",
        "--corpus", f"de={pretrain_text}", "--corpus", f"fr={fr}", "--train-lang", "de",
        "--output", tsv, "--max-train", "4000", "--max-eval", "200", "--candidates", "1",
    )  # fmt: skip
    splits = []
    for name in ("train", "valid", "test_en", "test_de", "test_fr"):
        splits += ["--split", f"{name}={tsv}/{name}.tsv,{tsv}/{name}.trans.tsv"]
    out = tmp / "bin"
    module(
        "veco_plugin.cli.prepare_sentence_prediction", "--layout", "pawsx",
        "--spm-model", f"{pretrain_data}/spm.model", "--dict", f"{pretrain_data}/dict.txt",
        "--output", out, *splits,
    )  # fmt: skip
    return out


def finetune(data, cold_start, save_dir, mode):
    args = [
        data, "--user-dir", USER_DIR, "--task", "veco_sentence_prediction",
        "--plug-mode", mode, "--criterion", "veco_sentence_prediction", "--num-classes", "2",
        "--init-token", "0", "--separator-token", "2", "--max-positions", MAX_POSITIONS,
        "--shorten-method", "truncate", "--arch", "veco_tiny", "--restore-file", cold_start,
        "--reset-optimizer", "--reset-dataloader", "--reset-meters", "--reset-lr-scheduler",
        "--dropout", "0", "--attention-dropout", "0", "--cpu", "--optimizer", "adam",
        "--adam-betas", "(0.9,0.98)", "--lr", "1e-3", "--lr-scheduler", "polynomial_decay",
        "--warmup-updates", "30", "--total-num-update", str(UPDATES),
        "--max-update", str(UPDATES), "--batch-size", "16", "--save-dir", save_dir,
        "--no-epoch-checkpoints", "--log-format", "json", "--log-interval", "50", "--seed", "1",
        "--num-workers", "0", "--validate-interval-updates", str(UPDATES),
        "--best-checkpoint-metric", "x_accuracy", "--maximize-best-checkpoint-metric",
    ]  # fmt: skip
    proc = run("fairseq-train", args, env=env(OMP_NUM_THREADS="2"))
    return proc.stdout + proc.stderr


def zero_shot(data, save_dir, name, tmp_path):
    out = tmp_path / f"{name}.json"
    proc = subprocess.run(
        [sys.executable, "-m", "veco_plugin.cli.sentence_prediction_eval", "--data", data,
         "--checkpoint", f"{name}={save_dir}/checkpoint_last.pt", "--json", out],
        check=True, capture_output=True, text=True, env=env(), cwd=REPO,
    )  # fmt: skip
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
        assert scores["test_en"] >= MIN_ACCURACY["out"]
    else:  # with translations; the fallback column is the zero-shot reading
        assert valid["x_accuracy"] >= MIN_ACCURACY["in"]
        assert table["in+tr"]["test_en"] >= MIN_ACCURACY["in"]
        assert "falling back to plug-out" in stderr
    assert os.path.exists(tmp_path / mode / "checkpoint_last.pt")
