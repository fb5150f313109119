"""``veco-prepare-pretraining`` as a user runs it, on real En/De/Fr/Es gettext text: two
shards built by two workers train with fairseq-train; together they hold every cleaned
segment once, in order, validation in shard0 only; a re-run rewrites nothing; a killed
worker leaves no half shard and the shard is rebuilt identically; two tasks of a job
array plan once; bad input ends in one line. (About 35 s on an idle 2-core machine.)"""

import filecmp
import gzip
import lzma
import os
import shlex
import shutil
import signal
import subprocess
import time

import pytest
from fairseq.data import Dictionary, data_utils

from tests.helpers.multilingual_text import gettext_corpora, has_catalogs, make_text
from tests.helpers.runner import BIN, WARM, env, json_logs, run
from tests.helpers.shared import built_once
from veco_plugin.corpora.subwords import load_sentencepiece

pytestmark = pytest.mark.skipif(not has_catalogs(), reason="needs de/fr/es gettext catalogs")

LINES, VALID = 1500, 100
MONO, BI = ["de", "en", "es", "fr"], ["en-de", "en-es", "en-fr"]


def flags(text, out, *extra):
    return [
        *("--text", text, "--out", out, "--shards", "2", "--vocab-size", "1000"),
        *("--valid-lines", VALID, "--spm-sample-lines", "8000", *extra),
    ]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    corpora = built_once(tmp_path_factory, "gettext-multilingual", gettext_corpora)
    root = tmp_path_factory.mktemp("prepare")
    text = make_text(corpora, root / "text", LINES)
    proc = run("veco-prepare-pretraining", flags(text, root / "data", "--workers", "2"))
    return text, str(root / "data"), proc


def test_shards_train_with_the_printed_command(prepared, tmp_path):
    """The command veco-prepare-pretraining prints, its ``...`` completed with the smallest
    flags of a run, trains on both shards (was: no --user-dir, fairseq's 'invalid choice:
    veco_pretraining')."""
    _, data, proc = prepared
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("DATA ready: ")]
    printed = shlex.split(line[len("DATA ready: ") :])
    assert printed[:2] == ["fairseq-train", f"{data}/shard0:{data}/shard1"] and printed[-1] == "..."
    completed = printed[1:-1] + [
        "--arch", "veco_tiny", "--criterion", "ca_mlm", "--optimizer", "adam", "--lr", "1e-3",
        "--max-tokens", "2000", "--max-update", "2", "--cpu", "--num-workers", "0",
        "--save-dir", tmp_path / "save", "--disable-validation", "--log-format", "json",
        "--log-interval", "1",
    ]  # fmt: skip
    out = run("fairseq-train", completed)
    assert [r["num_updates"] for r in json_logs(out.stdout + out.stderr)] == [1, 2]
    assert f"--mono-langs {','.join(MONO)} --bi-pairs {','.join(BI)}" in line


def _lines(path):
    data = open(path, "rb").read()
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    elif path.endswith(".xz"):
        data = lzma.decompress(data)
    return [" ".join(line.split()) for line in data.decode("utf-8").split("\n")[:-1]]


def _cleaned(folder, langs):
    """The segments of a corpus folder: every document in name order, empty ones out."""
    names = sorted(os.listdir(folder))
    if len(langs) == 1:
        return [(x,) for name in names for x in _lines(os.path.join(folder, name)) if x]
    stems = sorted({n.split(".")[0] for n in names})
    segments = []
    for stem in stems:
        sides = [
            _lines(os.path.join(folder, n))
            for lang in langs
            for n in names
            if n.split(".")[:2] == [stem, lang]
        ]
        segments += [pair for pair in zip(*sides) if all(pair)]
    return segments


def _binarized(prefix, dictionary):
    """The items of ``prefix.{bin,idx}`` (None: no such files)."""
    dataset = data_utils.load_indexed_dataset(prefix, dictionary)
    return None if dataset is None else [dataset[i].tolist() for i in range(len(dataset))]


def test_every_segment_once_in_order(prepared):
    """fairseq-preprocess ids of the sentencepiece pieces of each cleaned segment ==
    shard0's valid, then shard0's train + shard1's train (each shard a fair part)."""
    text, data, _ = prepared
    sp = load_sentencepiece(os.path.join(data, "spm.model"))
    dictionary = Dictionary.load(os.path.join(data, "dict.txt"))

    def ids(line):
        pieces = " ".join(sp.encode(line, out_type=str))
        return dictionary.encode_line(pieces, add_if_not_exist=False).tolist()

    for kind, names in (("mono", MONO), ("bi", BI)):
        for name in names:
            langs = name.split("-")
            segments = _cleaned(os.path.join(text, kind, name), langs)
            for side, lang in enumerate(langs):
                expected = [ids(segment[side]) for segment in segments]
                file = "{split}" if kind == "mono" else f"{{split}}.{name}.{lang}"
                found = {
                    (k, split): _binarized(
                        os.path.join(data, f"shard{k}", kind, name, file.format(split=split)),
                        dictionary,
                    )
                    for k in (0, 1)
                    for split in ("valid", "train")
                }
                assert found[0, "valid"] == expected[:VALID]
                assert found[1, "valid"] is None  # no validation data in shard1
                assert found[0, "train"] + found[1, "train"] == expected[VALID:]
                assert abs(len(found[0, "train"]) - len(found[1, "train"])) <= 1


def _files(data):
    return {
        os.path.join(root, name): os.stat(os.path.join(root, name)).st_mtime_ns
        for root, _, names in os.walk(data)
        for name in names
    }


def test_rerun_skips_and_rewrites_nothing(prepared):
    text, data, _ = prepared
    before = _files(data)
    proc = run("veco-prepare-pretraining", flags(text, data, "--workers", "2"))
    assert _files(data) == before
    assert proc.stderr.count("complete, skipped") == 2


def _children(pid):
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(x) for x in f.read().split()]


def test_killed_worker_leaves_no_half_shard(prepared, tmp_path):
    """SIGKILL a worker building a shard: one line; no shard half-written; the same
    command again builds the missing shards, identical to an uninterrupted run."""
    text, data, _ = prepared
    out = tmp_path / "data"
    out.mkdir()
    for name in ("prepare.json", "spm.model", "dict.txt"):
        shutil.copyfile(os.path.join(data, name), out / name)
    command = [
        os.path.join(BIN, "veco-prepare-pretraining"),
        *map(str, flags(text, out, "--workers", "2")),
    ]
    # forked warm (its workers are the fork's children); cold when no zygote can run it
    proc = WARM.popen(command, env(), merge_stderr=False) or subprocess.Popen(
        command, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    while not (out / ".shard1.partial").exists() and proc.poll() is None:
        time.sleep(0.002)
    workers = _children(proc.pid)
    assert len(workers) == 2
    os.kill(workers[-1], signal.SIGKILL)
    _, stderr = proc.communicate()
    assert proc.returncode == 1 and b"Traceback" not in stderr
    assert (
        stderr.decode()
        .splitlines()[-1]
        .startswith(
            "veco-prepare-pretraining: error: a shard worker died (killed, or out of memory)"
        )
    )
    for k in (0, 1):  # a shard is there complete (its worker finished first), or not at all
        if (out / f"shard{k}").exists():
            compared = filecmp.dircmp(os.path.join(data, f"shard{k}"), out / f"shard{k}")
            assert not compared.diff_files and not compared.left_only
    run("veco-prepare-pretraining", flags(text, out))
    assert sorted(os.listdir(out)) == [
        ".prepare.lock",
        "dict.txt",
        "prepare.json",
        "shard0",
        "shard1",
        "spm.model",
    ]
    for k in (0, 1):
        compared = filecmp.dircmp(os.path.join(data, f"shard{k}"), out / f"shard{k}")
        assert not compared.diff_files and not compared.left_only and not compared.right_only


def _pieces(model):
    sp = load_sentencepiece(str(model))
    return [(sp.id_to_piece(i), sp.get_score(i)) for i in range(len(sp))]


def test_job_array_tasks_plan_once(prepared, tmp_path):
    """Two --shard tasks started together on an empty DATA (a job array): one counts the
    text and trains the model, the other waits for it; the shards equal those of one
    command with --workers 2 (the model does not depend on --workers)."""
    text, data, _ = prepared
    out = tmp_path / "data"
    procs = []
    for k in (1, 0):  # two processes at once, each forked warm (a cold start when it cannot)
        argv = [
            os.path.join(BIN, "veco-prepare-pretraining"),
            *map(str, flags(text, out, "--shard", k)),
        ]
        procs.append(
            WARM.popen(argv, env(), merge_stderr=False)
            or subprocess.Popen(argv, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        )
    logs = [p.communicate()[1].decode(errors="replace") for p in procs]
    assert [p.returncode for p in procs] == [0, 0], logs
    assert sum("counting" in log for log in logs) == 1
    # the same model (spm.model also records where it was trained: compare the pieces)
    assert _pieces(os.path.join(data, "spm.model")) == _pieces(out / "spm.model")
    for k in (0, 1):
        compared = filecmp.dircmp(os.path.join(data, f"shard{k}"), out / f"shard{k}")
        assert compared.diff_files in ([], ["spm.model"]), compared.diff_files
        assert not compared.left_only and not compared.right_only
        assert not compared.subdirs["mono"].diff_files  # spot checks of the binaries
        assert not compared.subdirs["bi"].subdirs["en-fr"].diff_files


def test_bad_input_ends_in_one_line(prepared, tmp_path):
    text, _, _ = prepared
    shutil.copytree(os.path.join(text, "bi"), tmp_path / "text/bi")
    with open(tmp_path / "text/bi/en-es/gettext.en", "a", encoding="utf-8") as f:
        f.write("A line without its translation\n")
    proc = run("veco-prepare-pretraining", flags(tmp_path / "text", tmp_path / "data"), check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1] == (
        f"veco-prepare-pretraining: error: {tmp_path}/text/bi/en-es/gettext.en has {LINES + 1} "
        f"lines but {tmp_path}/text/bi/en-es/gettext.es.gz has {LINES}: the sides of a parallel "
        "corpus must match line by line (the usual cause is a stray \\r or other line break "
        "inside a sentence, e.g. from a tool that splits lines on \\r)"
    )
