"""More bad input, each tried as a user would: one line naming the file or flag and the
fix, a non-zero exit, no traceback, no ``.tmp`` left.

Every refusal is a separate command line (fairseq-train, fairseq-generate, the console
scripts, ``prepare-pretraining-data.sh``). Each costs a fairseq start-up and nothing
else, so one module fixture builds the inputs (a tiny veco DATA dir on the frozen
``veco_tiny`` dictionary, and a translation checkpoint made from the frozen checkpoint by
``veco-init-nmt``), runs fairseq-train's and fairseq-generate's entry points in the test
process (no start-up: tests/helpers/refusals.py) and the other commands two at a time; the
tests then read their command's ending.
"""

import os
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.helpers.refusals import FAIRSEQ, fairseq_in_process
from tests.helpers.runner import REPO, USER_DIR, env, pretrain_args, run

FROZEN = os.path.join(REPO, "tests", "fixtures", "checkpoints", "veco_tiny")
TEXT = os.path.join(REPO, "tests", "fixtures", "text")
PREPARE = os.path.join(REPO, "scripts", "prepare-pretraining-data.sh")


def _pretrain(data, save, *extra):
    """fairseq-train veco_pretraining on the mono/en data of ``data`` (no validation)."""
    args = pretrain_args(str(data), save, "ca_mlm", 2, "--disable-validation", *extra)
    args[args.index("--mono-langs") + 1] = "en"
    args[args.index("--bi-pairs") + 1] = ""
    return ("fairseq-train", args)


def _prepare(text, out, vocab):
    return ("bash", [PREPARE, "--text", text, "--out", out, "--vocab-size", str(vocab)])


def _run(command):
    script, args = command
    if script == "bash":
        return subprocess.run(
            ["bash", *map(str, args)],
            capture_output=True,
            text=True,
            env=env(PYTHON=sys.executable),
        )
    return run(script, args, check=False)


def _write_lines(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)


def _read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def _translation_dir(path, dictionary_lines):
    os.makedirs(path)
    for lang in ("en", "de"):
        _write_lines(os.path.join(path, f"dict.{lang}.txt"), dictionary_lines)
    return path


@pytest.fixture(scope="module")
def ends(tmp_path_factory):
    """{case: the CompletedProcess of its command} and the paths the tests look at."""
    root = tmp_path_factory.mktemp("bad_input_more")
    data = root / "data"  # DATA/dict.txt + mono/en (train, valid)
    data.mkdir()
    shutil.copy(os.path.join(FROZEN, "dict.txt"), data / "dict.txt")
    init = root / "init" / "init.pt"
    setup = [
        ("fairseq-preprocess", ["--only-source", "--srcdict", data / "dict.txt", "--workers", "1",
                                "--trainpref", os.path.join(TEXT, "mono.en"),
                                "--validpref", os.path.join(TEXT, "valid.en"),
                                "--destdir", data / "mono" / "en"]),
        ("veco-init-nmt", ["--pretrained", os.path.join(FROZEN, "checkpoint.pt"),
                           "--output", init]),
    ]  # fmt: skip
    with ThreadPoolExecutor(2) as pool:
        procs = list(pool.map(_run, setup))
    for proc in procs:
        assert proc.returncode == 0, proc.stderr[-3000:]
    printed = next(ln for ln in procs[1].stderr.splitlines() if "fairseq-train DATA" in ln)
    finetune = shlex.split(printed.split("fairseq-train DATA", 1)[1])  # flags veco-init-nmt printed
    finetune += ["-s", "en", "-t", "de", "--cpu", "--num-workers", "0", "--optimizer", "adam",
                 "--lr", "5e-4", "--max-tokens", "1024", "--max-update", "2",
                 "--disable-validation"]  # fmt: skip

    # Inputs for the cases.
    dict_lines = _read_lines(data / "dict.txt")
    nmt = _translation_dir(root / "nmt", dict_lines)
    other = _translation_dir(root / "other", dict_lines[1:] + dict_lines[:1])  # same size
    bad_dict = _translation_dir(root / "bad_dict", dict_lines[:6] + ["token-without-count"])
    broken = root / "broken"  # DATA whose dict.txt has a line without a count
    broken.mkdir()
    _write_lines(broken / "dict.txt", dict_lines[:4] + ["token-without-count"] + dict_lines[4:])
    truncated = root / "truncated"
    shutil.copytree(data, truncated)
    binary = truncated / "mono" / "en" / "train.bin"
    with open(binary, "r+b") as f:
        f.truncate(os.path.getsize(binary) // 2)
    text_file = root / "notes.pt"
    text_file.write_text("not a checkpoint\n", encoding="utf-8")
    other_arch = root / "other_arch"
    other_arch.mkdir()
    shutil.copy(init, other_arch / "checkpoint_last.pt")
    out_dir = root / "out"
    out_dir.mkdir()
    latin1 = root / "latin1"
    shutil.copytree(TEXT, latin1)
    lines = (latin1 / "train.de").read_bytes().split(b"\n")
    lines[6] += " caf\u00e9".encode("latin-1")
    (latin1 / "train.de").write_bytes(b"\n".join(lines))
    uneven = root / "uneven"
    shutil.copytree(TEXT, uneven)
    _write_lines(uneven / "train.de", _read_lines(uneven / "train.de")[:-1])

    ck = root / "ck"
    generate = ["--user-dir", USER_DIR, "--cpu", "--task", "translation_from_pretrained_veco",
                "-s", "en", "-t", "de", "--gen-subset", "test", "--beam", "2"]  # fmt: skip
    cases = {
        "train_subset": _pretrain(data, ck / "a", "--train-subset", "foo"),
        "truncated_bin": _pretrain(truncated, ck / "b"),
        "dict_line": _pretrain(broken, ck / "c"),
        "heads": _pretrain(data, ck / "d", "--encoder-embed-dim", "66"),
        "dropout": _pretrain(data, ck / "e", "--dropout", "1.5"),
        "max_positions": _pretrain(data, ck / "f", "--max-positions", "32"),
        "restore_missing": _pretrain(data, ck / "g", "--restore-file", root / "missing.pt"),
        "restore_text": _pretrain(data, ck / "h", "--restore-file", text_file),
        "xlmr_text": _pretrain(data, ck / "i", "--pretrained-xlmr", text_file),
        "other_arch": _pretrain(data, other_arch),
        "path_missing": ("fairseq-generate", [nmt, *generate, "--path", root / "missing.pt"]),
        "path_veco": ("fairseq-generate", [nmt, *generate, "--path", f"{FROZEN}/checkpoint.pt"]),
        "task": ("fairseq-generate", [nmt, *generate, "--task", "translation", "--path", init]),
        "translation_dict_line": ("fairseq-generate", [bad_dict, *generate, "--path", init]),
        "decoder_depth": ("fairseq-train", [nmt, *finetune, "--decoder-layers", "1",
                                            "--save-dir", ck / "j"]),
        "dictionary": ("fairseq-train", [other, *finetune, "--save-dir", ck / "k"]),
        "decoder_heads": ("fairseq-train", [nmt, *finetune, "--decoder-attention-heads", "3",
                                            "--save-dir", ck / "l"]),
        "languages": ("fairseq-generate", [nmt, *generate[:5], "--path", init]),
        "init_output_dir": ("veco-init-nmt", ["--pretrained", init, "--output", out_dir]),
        "average_output_dir": ("veco-average-checkpoints", ["--inputs", init, "--output",
                                                            out_dir]),
        "not_utf8": _prepare(latin1, root / "p1", 300),
        "line_counts": _prepare(uneven, root / "p2", 300),
        "vocab_size": _prepare(TEXT, root / "p3", 100000),
    }  # fmt: skip
    procs = {case: fairseq_in_process(script, args) for case, (script, args) in cases.items()
             if script in FAIRSEQ}  # fmt: skip
    others = [case for case in cases if case not in procs]
    with ThreadPoolExecutor(2) as pool:
        procs.update(zip(others, pool.map(_run, [cases[case] for case in others])))
    return {"procs": procs, "root": root, "init": init, "out_dir": out_dir}


def refused(ends, case, prog):
    """The one error line of a refused command: non-zero exit, no traceback, no ``.tmp``
    anywhere in the module's directory, and a last line ``PROG: error: ...``."""
    proc = ends["procs"][case]
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, f"{case}: should have been refused\n{output[-3000:]}"
    assert "Traceback" not in output, output[-3000:]
    assert not list(ends["root"].rglob("*.tmp"))
    line = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()][-1]
    assert line.startswith(f"{prog}: error: "), line
    return line


# --- data ------------------------------------------------------------------------------


def test_missing_train_subset_lists_the_splits_that_exist(ends):
    line = refused(ends, "train_subset", "fairseq-train")
    assert "--train-subset foo" in line and "mono/en" in line and "holds train, valid" in line


def test_truncated_bin_is_refused_at_load_time(ends):
    line = refused(ends, "truncated_bin", "fairseq-train")
    assert "truncated/mono/en/train.bin is truncated" in line and "train.idx" in line


def test_dictionary_line_without_count_names_file_and_line(ends):
    line = refused(ends, "dict_line", "fairseq-train")
    assert "broken/dict.txt:5: 'token-without-count'" in line


def test_translation_dictionary_line_names_file_and_line(ends):
    line = refused(ends, "translation_dict_line", "fairseq-generate")
    assert "bad_dict/dict.en.txt:7: 'token-without-count'" in line


# --- flags fairseq only asserts on (or fails on at the first batch) ------------------------


def test_width_not_divisible_by_heads(ends):
    line = refused(ends, "heads", "fairseq-train")
    assert "--encoder-embed-dim 66 is not divisible by --encoder-attention-heads 4" in line


def test_decoder_width_not_divisible_by_decoder_heads(ends):
    line = refused(ends, "decoder_heads", "fairseq-train")
    assert "--decoder-embed-dim 64 is not divisible by --decoder-attention-heads 3" in line


def test_dropout_outside_zero_one(ends):
    assert "--dropout 1.5: a probability" in refused(ends, "dropout", "fairseq-train")


def test_max_positions_below_the_task_inputs(ends):
    line = refused(ends, "max_positions", "fairseq-train")
    assert "--max-positions 32 is below the 96 positions" in line


# --- checkpoints ----------------------------------------------------------------------


def test_missing_restore_file_is_refused_not_ignored(ends):
    line = refused(ends, "restore_missing", "fairseq-train")
    assert "--restore-file" in line and "missing.pt: no such file" in line


@pytest.mark.parametrize("case", ["restore_text", "xlmr_text"])
def test_text_file_as_checkpoint(ends, case):
    assert "notes.pt: not a PyTorch checkpoint" in refused(ends, case, "fairseq-train")


def test_save_dir_with_another_architectures_checkpoint(ends):
    line = refused(ends, "other_arch", "fairseq-train")
    assert "other_arch/checkpoint_last.pt holds a veco_transformer_tiny model" in line
    assert "this run builds veco_tiny" in line and "fresh --save-dir" in line


def test_generate_missing_path(ends):
    line = refused(ends, "path_missing", "fairseq-generate")
    assert "--path" in line and "missing.pt: no such checkpoint file" in line


def test_generate_with_a_pretraining_checkpoint_says_convert_it(ends):
    line = refused(ends, "path_veco", "fairseq-generate")
    assert "veco_tiny/checkpoint.pt" in line and "veco-init-nmt" in line


def test_finetuning_with_other_decoder_depth_gives_the_reason(ends):
    line = refused(ends, "decoder_depth", "fairseq-train")
    assert "the checkpoint has 2 decoder layers, the model 1" in line
    assert str(ends["init"]) in line and "architectures match" not in line


def test_finetuning_data_with_another_dictionary_gives_the_reason(ends):
    line = refused(ends, "dictionary", "fairseq-train")
    assert "the data dictionary is not the checkpoint's" in line


def test_translation_data_without_languages(ends):
    line = refused(ends, "languages", "fairseq-generate")
    assert "nmt: cannot tell the languages" in line and "-s SRC -t TGT" in line


def test_generate_with_another_task_gives_the_reason(ends):
    line = refused(ends, "task", "fairseq-generate")
    assert "run with --task translation_from_pretrained_veco" in line


@pytest.mark.parametrize(
    "case,prog",
    [("init_output_dir", "veco-init-nmt"), ("average_output_dir", "veco-average-checkpoints")],
)
def test_output_that_is_a_directory(ends, case, prog):
    line = refused(ends, case, prog)
    assert f"--output {ends['out_dir']} is a directory" in line
    assert not os.listdir(ends["out_dir"])


# --- text -----------------------------------------------------------------------------


def test_prepare_non_utf8_names_file_and_line(ends):
    line = refused(ends, "not_utf8", "prepare-pretraining-data.sh")
    assert "latin1/train.de line 7: not valid UTF-8 (byte 0xe9" in line


def test_prepare_sides_with_different_line_counts(ends):
    line = refused(ends, "line_counts", "prepare-pretraining-data.sh")
    assert "uneven/train.en has 260 lines but" in line and "uneven/train.de has 259" in line


def test_prepare_vocabulary_larger_than_the_text_supports(ends):
    line = refused(ends, "vocab_size", "prepare-pretraining-data.sh")
    assert "--vocab-size 100000: the text supports at most" in line
