"""Bad input: one-line errors naming the file or flag and the fix; no mid-epoch crash."""

import os
import shutil
import signal
import subprocess

import pytest

from tests.helpers.refusals import train_refused
from tests.helpers.runner import BIN, env, json_logs, pretrain_args, run

TRAIN_LINES = 300  # of the training pairs, re-binarized with a carriage return


def _train_error(args) -> str:
    """Run the installed fairseq-train expecting a refusal: non-zero exit, no traceback,
    and a last line ``fairseq-train: error: ...``; return that line. (The other cases run
    its entry point in the test process: ``train_refused``.)"""
    proc = run("fairseq-train", args, check=False)
    assert proc.returncode != 0, "fairseq-train should have refused this input"
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    line = [line for line in proc.stderr.strip().splitlines() if line.strip()][-1]
    assert line.startswith("fairseq-train: error: "), line
    return line


def test_missing_language(pretrain_data, tmp_path):
    args = pretrain_args(pretrain_data, tmp_path / "ck", "ca_mlm", 2)
    args[args.index("--mono-langs") + 1] = "en,fr"
    line = _train_error(args)
    assert "mono/fr" in line and "holds de, en" in line
    assert "fairseq-preprocess --only-source" in line


def test_missing_split(pretrain_data, tmp_path):
    args = pretrain_args(pretrain_data, tmp_path / "ck", "ca_mlm", 2, "--valid-subset", "test")
    assert "test" in train_refused(args)


def test_misaligned_bilingual_sides_name_the_carriage_return(pretrain_data, tmp_path):
    """The first TRAIN_LINES pairs re-binarized with a carriage return inside one English
    line (what splits it is fairseq-preprocess's reading, not the corpus's size: the whole
    training text took ~20 s to binarize, this ~1 s)."""
    data = tmp_path / "data"
    shutil.copytree(pretrain_data, data)
    text = data / "text"
    for lang in ("en", "de"):
        lines = (text / f"train.spm.{lang}").read_text(encoding="utf-8").splitlines()
        lines = lines[:TRAIN_LINES]
        if lang == "en":
            lines[3] = lines[3].replace(" ", " \r", 1)  # a stray carriage return inside a line
        (tmp_path / f"train.spm.{lang}").write_text(
            "\n".join(lines) + "\n", encoding="utf-8", newline=""
        )
    shutil.rmtree(data / "bi" / "en-de")
    run(
        "fairseq-preprocess",
        [
            "-s",
            "en",
            "-t",
            "de",
            "--srcdict",
            data / "dict.txt",
            "--tgtdict",
            data / "dict.txt",
            "--trainpref",
            tmp_path / "train.spm",
            "--validpref",
            text / "valid.spm",
            "--destdir",
            data / "bi" / "en-de",
        ],
    )
    line = train_refused(pretrain_args(str(data), tmp_path / "ck", "ca_mlm", 2))
    assert "train.en-de" in line and "carriage return" in line


def test_data_binarized_with_another_dictionary(pretrain_data, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(pretrain_data, data)
    with open(data / "mono" / "de" / "dict.txt", "a", encoding="utf-8") as f:
        f.write("extra-symbol 1\n")
    line = train_refused(pretrain_args(str(data), tmp_path / "ck", "ca_mlm", 2))
    assert "mono/de/dict.txt differs" in line and "--srcdict" in line


def test_long_and_empty_lines_in_training_and_validation(pretrain_data, tmp_path):
    """German validation text with an overlong and an empty line, binarized alone (no
    --trainpref: the training split stays pretrain_data's own binarized file; binarizing
    its ~37,000 lines again took ~18 s), then trained on and validated through."""
    data = tmp_path / "data"
    shutil.copytree(pretrain_data, data)
    text = data / "text"
    valid = (text / "valid.spm.de").read_text(encoding="utf-8").splitlines()
    valid[0] = " ".join(valid[:40])  # far over --max-mono-positions
    valid[1] = ""  # empty
    (text / "valid.spm.de").write_text("\n".join(valid) + "\n", encoding="utf-8")
    run(
        "fairseq-preprocess",
        [
            "--only-source",
            "--srcdict",
            data / "dict.txt",
            "--validpref",
            text / "valid.spm.de",
            "--destdir",
            tmp_path / "valid",
        ],
    )
    for suffix in ("bin", "idx"):
        shutil.copyfile(
            tmp_path / "valid" / f"valid.{suffix}", data / "mono" / "de" / f"valid.{suffix}"
        )
    out = run("fairseq-train", pretrain_args(str(data), tmp_path / "ck", "ca_mlm", 4)).stdout
    assert "mono/de/valid: skipping 1 of" in out and "mono/de/valid: truncating" in out
    assert json_logs(out, "valid"), "validation must run through"


def test_fully_sharded_is_refused(pretrain_data, tmp_path):
    args = pretrain_args(
        pretrain_data, tmp_path / "ck", "ca_mlm", 2, "--ddp-backend", "fully_sharded"
    )
    line = train_refused(args)
    assert "--ddp-backend fully_sharded" in line and "pytorch_ddp" in line


@pytest.mark.parametrize(
    "flag,value,expected",
    [
        ("--mono-mask-prob", "0", "--mono-mask-prob 0.0: must be in (0, 1]"),
        ("--bi-mask-prob", "1.5", "--bi-mask-prob 1.5: must be in (0, 1]"),
        ("--bi-pairs", "en_de", "'en_de' is not SRC-TGT"),
        ("--bi-pairs", "de-en", "bi/en-de exists: pass --bi-pairs en-de"),
    ],
)
def test_flags_checked_before_any_data(pretrain_data, tmp_path, flag, value, expected):
    args = pretrain_args(pretrain_data, tmp_path / "ck", "ca_mlm", 2, flag, value)
    assert expected in train_refused(args)


@pytest.mark.parametrize(
    "extra,expected",
    [
        (["--arch", "roberta_base"], "--arch roberta_base builds a RobertaModel: --task "
         "veco_pretraining trains a veco encoder, --arch "),
        (["--arch", "veco_transformer_tiny"], "--arch veco_transformer_tiny builds a "
         "VecoTransformerModel: --task veco_pretraining trains a veco encoder"),
        (["--criterion", "masked_lm"], "--criterion masked_lm: --task veco_pretraining's "
         "batches are read by the plugin's objectives: give --criterion "),
    ],
    ids=["roberta", "translation-model", "masked_lm"],
)  # fmt: skip
def test_a_model_or_criterion_the_task_cannot_train(pretrain_data, tmp_path, extra, expected):
    """Was: AttributeError ('RobertaModel' object has no attribute 'sentence_encoder') and
    KeyError: 'target', each with a traceback."""
    line = train_refused(pretrain_args(pretrain_data, tmp_path / "ck", "ca_mlm", 2, *extra))
    assert expected in line and ("veco_base" in line or "ca_mlm" in line), line


@pytest.mark.parametrize(
    "flag,expected",
    [
        ("--restore-file", "--restore-file {}: no such file"),
        ("--finetune-from-model", "--finetune-from-model {} does not exist: give the checkpoint"),
    ],
)
def test_a_missing_checkpoint_to_start_from(pretrain_data, tmp_path, flag, expected):
    missing = tmp_path / "missing.pt"
    args = pretrain_args(pretrain_data, tmp_path / "ck", "ca_mlm", 2, flag, missing)
    assert expected.format(missing) in train_refused(args)


def test_ctrl_c_ends_in_one_line(pretrain_data, tmp_path):
    proc = subprocess.Popen(
        [os.path.join(BIN, "fairseq-train")]
        + [str(a) for a in pretrain_args(pretrain_data, tmp_path / "ck", "ca_mlm", 100000)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
        # a suite started in the background (``make test &``) ignores SIGINT, and so would
        # the child: give it the default disposition, as an interactive terminal does
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        for line in proc.stdout:  # interrupt once training runs, however slow the start
            if "begin training epoch" in line:
                break
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()  # never leave a training process behind
    assert proc.returncode != 0 and "Traceback" not in err, err[-3000:]
    assert err.strip().splitlines()[-1] == (
        "fairseq-train: interrupted; resume with the same command"
    )
