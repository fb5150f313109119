"""Bad input: one-line errors naming the file or flag and the fix; no mid-epoch crash."""

import shutil

from runner import json_logs, pretrain_args, run


def _train_error(args) -> str:
    """Run fairseq-train expecting failure; return the last line it printed on stderr."""
    proc = run("fairseq-train", args, check=False)
    assert proc.returncode != 0, "fairseq-train should have refused this input"
    return [line for line in proc.stderr.strip().splitlines() if line.strip()][-1]


def test_missing_language(pretrain_data, tmp_path):
    args = pretrain_args(pretrain_data, tmp_path / "ck", "ca_mlm", 2)
    args[args.index("--mono-langs") + 1] = "en,fr"
    line = _train_error(args)
    assert "mono/fr/" in line and "fairseq-preprocess --only-source" in line


def test_missing_split(pretrain_data, tmp_path):
    args = pretrain_args(pretrain_data, tmp_path / "ck", "ca_mlm", 2, "--valid-subset", "test")
    assert "test" in _train_error(args)


def test_misaligned_bilingual_sides_name_the_carriage_return(pretrain_data, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(pretrain_data, data)
    text = data / "text"
    lines = (text / "train.spm.en").read_text(encoding="utf-8").splitlines()
    lines[3] = lines[3].replace(" ", " \r", 1)  # a stray carriage return inside a line
    (text / "train.spm.en").write_text("\n".join(lines) + "\n", encoding="utf-8", newline="")
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
            text / "train.spm",
            "--validpref",
            text / "valid.spm",
            "--destdir",
            data / "bi" / "en-de",
        ],
    )
    line = _train_error(pretrain_args(str(data), tmp_path / "ck", "ca_mlm", 2))
    assert "train.en-de" in line and "carriage return" in line


def test_data_binarized_with_another_dictionary(pretrain_data, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(pretrain_data, data)
    with open(data / "mono" / "de" / "dict.txt", "a", encoding="utf-8") as f:
        f.write("extra-symbol 1\n")
    line = _train_error(pretrain_args(str(data), tmp_path / "ck", "ca_mlm", 2))
    assert "mono/de/dict.txt differs" in line and "--srcdict" in line


def test_long_and_empty_lines_in_training_and_validation(pretrain_data, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(pretrain_data, data)
    text = data / "text"
    valid = (text / "valid.spm.de").read_text(encoding="utf-8").splitlines()
    valid[0] = " ".join(valid[:40])  # far over --max-mono-positions
    valid[1] = ""  # empty
    (text / "valid.spm.de").write_text("\n".join(valid) + "\n", encoding="utf-8")
    shutil.rmtree(data / "mono" / "de")
    run(
        "fairseq-preprocess",
        [
            "--only-source",
            "--srcdict",
            data / "dict.txt",
            "--trainpref",
            text / "mono.spm.de",
            "--validpref",
            text / "valid.spm.de",
            "--destdir",
            data / "mono" / "de",
        ],
    )
    out = run("fairseq-train", pretrain_args(str(data), tmp_path / "ck", "ca_mlm", 4)).stdout
    assert "mono/de/valid: skipping 1 of" in out and "mono/de/valid: truncating" in out
    assert json_logs(out, "valid"), "validation must run through"


def test_fully_sharded_is_refused(pretrain_data, tmp_path):
    args = pretrain_args(
        pretrain_data, tmp_path / "ck", "ca_mlm", 2, "--ddp-backend", "fully_sharded"
    )
    line = _train_error(args)
    assert "--ddp-backend fully_sharded" in line and "pytorch_ddp" in line
