"""The WMT14 shell scripts end to end on a WMT-shaped fixture of real gettext text.

One module fixture builds the statmt.org-shaped raw dir (3000 train pairs in three
corpora, newstest2013 of 100, newstest2014 'full' of 203 = not a multiple of 8), trains
a sentencepiece model on it, runs ``prepare-wmt14en2de.sh`` and trains a tiny stock
fairseq ``transformer`` for 30 updates. The evaluate test then runs the averaging ->
fairseq-generate -> both-BLEU path on those checkpoints. (The VECO model replaces the
stock Transformer once its task/arch exist; the scripts only take names.)
"""

import json
import math
import os
import random
import re
import shutil
import subprocess
import sys

import pytest

from tests.helpers import wmt_fixture
from tests.helpers.runner import WARM, WARM_PATH

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
SCRIPTS = os.path.join(ROOT, "scripts")
PLUGIN = os.path.join(ROOT, "veco_plugin")
VENV_BIN = os.path.dirname(sys.executable)

pytestmark = pytest.mark.skipif(
    not wmt_fixture.have_catalogs(("de", "fr")),
    reason="no gettext catalogs under /usr/share/locale/{de,fr}/LC_MESSAGES "
    "(the fixture's source of real English-German/French text)",
)

N_TEST = 203
TINY = [
    "--share-all-embeddings", "--encoder-layers", "1", "--decoder-layers", "1",
    "--encoder-embed-dim", "32", "--decoder-embed-dim", "32",
    "--encoder-ffn-embed-dim", "64", "--decoder-ffn-embed-dim", "64",
    "--encoder-attention-heads", "2", "--decoder-attention-heads", "2",
    "--num-workers", "0",
]  # fmt: skip


def _env(path_prepend=None):
    env = dict(os.environ)
    env["PATH"] = VENV_BIN + os.pathsep + env.get("PATH", "")
    if path_prepend:
        env["PATH"] = path_prepend + os.pathsep + env["PATH"]
    env.setdefault("OMP_NUM_THREADS", "2")
    return WARM_PATH.env(env)  # the scripts' Python commands start warm


def run(cmd, check=True, path_prepend=None, **kw):
    """``cmd`` (a Python command forked from the tests' zygote, others cold): the
    completed process, its output as text."""
    env = _env(path_prepend)
    warm = None if kw else WARM.popen(cmd, env, merge_stderr=False)
    if warm is None:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, **kw)
    else:
        out, err = (b.decode(errors="replace") for b in warm.communicate())
        proc = subprocess.CompletedProcess(cmd, warm.returncode, out, err)
    if check:
        assert proc.returncode == 0, (
            f"{' '.join(cmd)}\nexit {proc.returncode}\n"
            f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-5000:]}"
        )
    return proc


def last_line(proc):
    return proc.stderr.strip().splitlines()[-1]


def n_lines(path):
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def train_spm(texts, prefix, vocab_size=2000):
    """A BPE sentencepiece model (the XLM-R kind) + a fairseq dict from its vocab."""
    import sentencepiece as spm

    corpus = prefix + ".txt"
    wmt_fixture.write_lines(corpus, texts)
    spm.SentencePieceTrainer.train(
        input=corpus, model_prefix=prefix, vocab_size=vocab_size, model_type="bpe",
        character_coverage=1.0, minloglevel=2, num_threads=2,
    )  # fmt: skip
    with open(prefix + ".vocab", encoding="utf-8") as f, open(
        prefix + ".dict.txt", "w", encoding="utf-8"
    ) as out:
        for line in f:
            piece = line.split("\t")[0]
            if piece not in ("<unk>", "<s>", "</s>"):
                out.write(f"{piece} 1\n")
    return prefix + ".model", prefix + ".dict.txt"


def prepare_cmd(raw_dir, out, spm_model, dict_path, script="prepare-wmt14en2de.sh"):
    return [
        "bash", os.path.join(SCRIPTS, script), "--raw-dir", raw_dir,
        "--tmp-dir", os.path.join(out, "tmp"), "--dest-dir", os.path.join(out, "bin"),
        "--spm-model", spm_model, "--dict", dict_path, "--workers", "2",
        "--no-download", "--user-dir", PLUGIN,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def wmt(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("wmt14"))
    raw = os.path.join(root, "raw")
    fx = wmt_fixture.build_wmt14_raw(raw, langs=("de", "fr"), n_test=N_TEST)
    de = fx.langs["de"]
    texts = [t for pairs in de.train.values() for p in pairs for t in p]
    texts += [t for pairs in fx.langs["fr"].train.values() for p in pairs for t in p]
    spm_model, dict_path = train_spm(texts, os.path.join(root, "spm"))
    out = os.path.join(root, "en_de")
    proc = run(prepare_cmd(raw, out, spm_model, dict_path))
    data = os.path.join(out, "bin")
    ckpt = os.path.join(root, "ckpt")
    run(
        [
            "fairseq-train", data, "--user-dir", PLUGIN, "--arch", "transformer", *TINY,
            "--optimizer", "adam", "--lr", "5e-3", "--max-tokens", "4000",
            "--criterion", "label_smoothed_cross_entropy", "--max-update", "30",
            "--save-interval-updates", "10", "--no-epoch-checkpoints",
            "--save-dir", ckpt, "--cpu", "--seed", "1", "--log-format", "none",
        ]  # fmt: skip
    )
    return dict(
        root=root, raw=raw, fx=fx, spm=spm_model, dict=dict_path, out=out, data=data,
        ckpt=ckpt, prepare_log=proc.stdout + proc.stderr,
    )  # fmt: skip


# ----------------------------------------------------------------------------- prepare


def test_prepare_binarizes_every_valid_and_test_sentence(wmt):
    from fairseq.data import data_utils

    data, de = wmt["data"], wmt["fx"].langs["de"]
    for split in ("train", "valid", "test"):
        for lang in ("en", "de"):
            for ext in ("bin", "idx"):
                assert os.path.isfile(os.path.join(data, f"{split}.en-de.{lang}.{ext}"))
    assert os.path.isfile(os.path.join(data, "dict.en.txt"))
    expected = {"valid": de.n_valid, "test": N_TEST}
    for split, n in expected.items():
        for lang in ("en", "de"):
            ds = data_utils.load_indexed_dataset(os.path.join(data, f"{split}.en-de.{lang}"), None)
            assert len(ds) == n, (split, lang)
    # training pairs: cleaned, so at most the fixture's, and most of them survive
    n_train = n_lines(os.path.join(wmt["out"], "tmp", "train.en"))
    assert de.n_train * 0.5 < n_train <= de.n_train
    assert "train: commoncrawl: kept" in wmt["prepare_log"]


def test_prepare_keeps_raw_references_in_order(wmt):
    data, de = wmt["data"], wmt["fx"].langs["de"]
    with open(os.path.join(data, "test.raw.de"), encoding="utf-8") as f:
        refs = f.read().splitlines()
    with open(os.path.join(data, "test.raw.en"), encoding="utf-8") as f:
        srcs = f.read().splitlines()
    assert refs == [p[1] for p in de.test]
    assert srcs == [p[0] for p in de.test]
    with open(os.path.join(data, "valid.raw.de"), encoding="utf-8") as f:
        assert f.read().splitlines() == [p[1] for p in de.valid["newstest2013"]]


def test_prepare_en_fr_reads_un_and_giga(wmt):
    out = os.path.join(wmt["root"], "en_fr")
    proc = run(prepare_cmd(wmt["raw"], out, wmt["spm"], wmt["dict"], "prepare-wmt14en2fr.sh"))
    fr = wmt["fx"].langs["fr"]
    log = proc.stderr
    assert "train: un: kept" in log and "train: giga-fren: kept" in log
    assert n_lines(os.path.join(out, "bin", "valid.raw.fr")) == fr.n_valid == 200
    assert n_lines(os.path.join(out, "bin", "test.raw.fr")) == N_TEST
    assert os.path.isfile(os.path.join(out, "bin", "test.en-fr.fr.idx"))


FAKE_CURL = """#!/usr/bin/env bash
# stand-in for curl: serves {raw}/<archive> for http://statmt.org/.../<archive>
set -euo pipefail
out=; url=
while [[ $# -gt 0 ]]; do
  case "$1" in
    -o) out=$2; shift 2 ;;
    --retry) shift 2 ;;
    -*) shift ;;
    *) url=$1; shift ;;
  esac
done
echo "$url" >> {log}
cp "{raw}/$(basename "$url")" "$out"
"""


def test_prepare_downloads_missing_archives(wmt, tmp_path):
    """An empty --raw-dir: each statmt.org archive is fetched (by a curl stand-in
    serving the fixture's archives), then the data is prepared as usual."""
    fake_bin, log = tmp_path / "fakebin", tmp_path / "curl.log"
    fake_bin.mkdir()
    (fake_bin / "curl").write_text(FAKE_CURL.format(raw=wmt["raw"], log=log))
    (fake_bin / "curl").chmod(0o755)
    raw, out = str(tmp_path / "raw"), str(tmp_path / "out")
    cmd = prepare_cmd(raw, out, wmt["spm"], wmt["dict"])
    cmd.remove("--no-download")
    run(cmd, path_prepend=str(fake_bin))
    urls = log.read_text().split()
    assert all(u.startswith("http://statmt.org/wmt1") for u in urls), urls
    assert sorted(os.path.basename(u) for u in urls) == [
        "dev.tgz",
        "test-full.tgz",
        "training-parallel-commoncrawl.tgz",
        "training-parallel-europarl-v7.tgz",
        "training-parallel-nc-v9.tgz",
    ]
    assert n_lines(os.path.join(out, "bin", "test.raw.de")) == N_TEST


def test_no_download_names_the_missing_archive(wmt, tmp_path):
    raw = tmp_path / "empty"
    raw.mkdir()
    proc = run(
        prepare_cmd(str(raw), str(tmp_path / "out"), wmt["spm"], wmt["dict"]),
        check=False,
    )
    assert proc.returncode != 0
    msg = last_line(proc)
    assert "training-parallel-europarl-v7.tgz is not in" in msg
    assert "http://statmt.org/wmt13/training-parallel-europarl-v7.tgz" in msg


def _have_fastbpe():
    try:
        import fastBPE  # noqa: F401
    except ImportError:
        return False
    return os.path.isfile(os.path.join(VENV_BIN, "fastbpe"))


@pytest.mark.skipif(
    not _have_fastbpe(),
    reason="fastBPE module or fastbpe CLI not installed (scripts/install-fastbpe.sh)",
)
def test_prepare_with_fastbpe_codes(wmt, tmp_path):
    """--bpe-codes: Moses-tokenized text, fastBPE-encoded (``@@ `` joints)."""
    from sacremoses import MosesTokenizer

    de = wmt["fx"].langs["de"]
    tok = {lang: MosesTokenizer(lang=lang) for lang in ("en", "de")}
    text = str(tmp_path / "tok.txt")
    wmt_fixture.write_lines(
        text,
        [
            tok[lang].tokenize(pair[i], return_str=True, escape=False)
            for pairs in de.train.values()
            for pair in pairs
            for i, lang in enumerate(("en", "de"))
        ],
    )
    fastbpe = os.path.join(VENV_BIN, "fastbpe")
    codes, bpe_text = str(tmp_path / "codes"), str(tmp_path / "bpe.txt")
    with open(codes, "w") as f:
        subprocess.run([fastbpe, "learnbpe", "1500", text], stdout=f, check=True)
    run([fastbpe, "applybpe", bpe_text, text, codes])
    vocab = str(tmp_path / "dict.txt")
    with open(vocab, "w") as f:
        subprocess.run([fastbpe, "getvocab", bpe_text], stdout=f, check=True)
    out = str(tmp_path / "out")
    cmd = prepare_cmd(wmt["raw"], out, wmt["spm"], vocab)
    cmd[cmd.index("--spm-model") : cmd.index("--spm-model") + 2] = [
        "--bpe-codes",
        codes,
    ]
    run(cmd)
    assert n_lines(os.path.join(out, "bin", "test.raw.de")) == N_TEST
    with open(os.path.join(out, "tmp", "test.de"), encoding="utf-8") as f:
        encoded = f.read()
    assert "@@ " in encoded and "\u2581" not in encoded
    assert os.path.isfile(os.path.join(out, "bin", "test.en-de.de.idx"))


def test_prepare_help_and_unknown_flag():
    proc = run(["bash", os.path.join(SCRIPTS, "prepare-wmt14en2de.sh"), "--help"])
    assert "--spm-model" in proc.stdout and "--raw-dir" in proc.stdout
    proc = run(["bash", os.path.join(SCRIPTS, "prepare-wmt14en2de.sh"), "--bogus"], check=False)
    assert proc.returncode != 0 and "unknown flag --bogus" in last_line(proc)


# ------------------------------------------------------------------------- bad input


def test_missing_spm_model_is_one_line_error(wmt, tmp_path):
    missing = str(tmp_path / "nope.model")
    proc = run(prepare_cmd(wmt["raw"], str(tmp_path), missing, wmt["dict"]), check=False)
    assert proc.returncode != 0
    assert proc.stderr.strip().count("\n") == 0, proc.stderr
    assert "sentencepiece model" in proc.stderr and missing in proc.stderr


@pytest.fixture
def extracted_raw(tmp_path):
    raw = str(tmp_path / "raw")
    wmt_fixture.build_wmt14_raw(raw, langs=("de",), n_train=300, n_test=N_TEST, extracted=True)
    return raw


def test_non_utf8_line_is_reported_with_file_and_line(wmt, extracted_raw, tmp_path):
    path = wmt_fixture.first_member(extracted_raw, "commoncrawl.de-en.de")
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    lines[41] = lines[41] + b" Gr\xfc\xdfe"  # latin-1 bytes in line 42
    with open(path, "wb") as f:
        f.write(b"\n".join(lines))
    proc = run(
        prepare_cmd(extracted_raw, str(tmp_path / "out"), wmt["spm"], wmt["dict"]),
        check=False,
    )
    assert proc.returncode != 0
    msg = last_line(proc)
    assert "error" in msg and "commoncrawl.de-en.de line 42" in msg
    assert "not valid UTF-8" in msg
    assert "Traceback" not in proc.stderr


def test_mismatched_line_counts_name_both_files(wmt, extracted_raw, tmp_path):
    path = wmt_fixture.first_member(extracted_raw, "europarl-v7.de-en.de")
    with open(path, "rb") as f:
        data = f.read()
    # one sentence broken in two, as a tool that splits lines at a stray \r leaves it
    first, rest = data.split(b"\n", 1)
    words = first.split(b" ")
    with open(path, "wb") as f:
        f.write(b" ".join(words[:2]) + b"\n" + b" ".join(words[2:]) + b"\n" + rest)
    proc = run(
        prepare_cmd(extracted_raw, str(tmp_path / "out"), wmt["spm"], wmt["dict"]),
        check=False,
    )
    assert proc.returncode != 0
    msg = last_line(proc)
    assert "europarl-v7.de-en.en" in msg and "europarl-v7.de-en.de" in msg
    assert "\\r" in msg
    n_en = n_lines(wmt_fixture.first_member(extracted_raw, "europarl-v7.de-en.en"))
    assert f"has {n_en} lines but" in msg and f"has {n_en + 1}" in msg


# ----------------------------------------------------------------------------- evaluate


def _evaluate(wmt, out_dir, *extra):
    return run(
        [
            "bash", os.path.join(SCRIPTS, "evaluate-wmt14.sh"),
            "--checkpoint-dir", wmt["ckpt"], "--data-bin", wmt["data"],
            "--spm-model", wmt["spm"], "--user-dir", PLUGIN, "--out-dir", out_dir,
            "--src", "en", "--tgt", "de", "--gen-subset", "test", "--beam", "5",
            "--num-update-checkpoints", "10", "--task", "translation", *extra,
        ],  # fmt: skip
        check=False,
    )


def test_evaluate_averages_translates_every_sentence_and_scores(wmt, tmp_path):
    out = str(tmp_path / "eval")
    proc = _evaluate(wmt, out, "--", "--cpu")
    assert proc.returncode == 0, proc.stderr[-4000:]
    # fewer than the 10 asked for exist (every 10 updates, not at an epoch end)
    n_ckpt = len([n for n in os.listdir(wmt["ckpt"]) if re.match(r"checkpoint_\d+_\d+", n)])
    assert 2 <= n_ckpt < 10
    assert f"asked for 10 update checkpoints but found only {n_ckpt}" in proc.stderr
    assert os.path.isfile(os.path.join(out, "averaged.pt"))

    gen = open(os.path.join(out, "generate-test.txt"), encoding="utf-8").read()
    assert len(re.findall(r"^H-\d+\t", gen, flags=re.M)) == N_TEST
    assert n_lines(os.path.join(out, "test.hyp.de")) == N_TEST

    signature = r"BLEU\|nrefs:1\|case:mixed\|eff:no\|tok:13a\|smooth:exp\|version:\S+"
    sig = re.search(signature, proc.stdout)
    assert sig, proc.stdout
    assert "tokenized BLEU" in proc.stdout
    scores = json.load(open(os.path.join(out, "scores.json")))
    assert scores["sentences"] == N_TEST
    assert math.isfinite(scores["sacrebleu"]["score"])
    assert math.isfinite(scores["tokenized_bleu"]["score"])
    assert "tok:13a" in scores["sacrebleu"]["signature"]
    assert "tok:none" in scores["tokenized_bleu"]["signature"]


def test_evaluate_fails_when_generate_drops_sentences(wmt, tmp_path):
    """fairseq-generate drops a final batch that is not a multiple of
    --required-batch-size-multiple; the script must notice (here forced back to 8)."""
    ckpt = os.path.join(wmt["ckpt"], "checkpoint_last.pt")
    proc = _evaluate(
        wmt,
        str(tmp_path / "eval"),
        "--checkpoint",
        ckpt,
        "--",
        "--cpu",
        "--required-batch-size-multiple",
        "8",
    )
    assert proc.returncode != 0
    msg = last_line(proc)
    assert f"hypotheses for {N_TEST} source sentences" in msg


def test_score_orders_hypotheses_and_decodes_subwords(wmt, tmp_path):
    """Reference subwords as hypotheses, shuffled: both BLEU scores must be 100."""
    with open(os.path.join(wmt["out"], "tmp", "test.de"), encoding="utf-8") as f:
        pieces = f.read().splitlines()
    order = list(range(len(pieces)))
    random.Random(0).shuffle(order)
    gen = tmp_path / "generate-test.txt"
    with open(gen, "w", encoding="utf-8") as f:
        for i in order:
            f.write(f"S-{i}\tsource\nH-{i}\t-0.5\t{pieces[i]}\nD-{i}\t-0.5\tx\n")
    proc = run(
        [
            os.path.join(VENV_BIN, "veco-wmt14"), "score",
            "--generate-output", str(gen),
            "--raw-ref", os.path.join(wmt["data"], "test.raw.de"),
            "--raw-src", os.path.join(wmt["data"], "test.raw.en"), "--tgt", "de",
            "--spm-model", wmt["spm"], "--hyp-out", str(tmp_path / "hyp.de"),
            "--json", str(tmp_path / "scores.json"),
        ]  # fmt: skip
    )
    scores = json.load(open(tmp_path / "scores.json"))
    assert scores["sacrebleu"]["score"] == pytest.approx(100.0)
    assert scores["tokenized_bleu"]["score"] == pytest.approx(100.0)
    assert open(tmp_path / "hyp.de", encoding="utf-8").read().splitlines() == [
        p[1] for p in wmt["fx"].langs["de"].test
    ]
    assert "version:" in proc.stdout


# ----------------------------------------------------------------------------- finetune


def test_finetune_update_freq_and_paper_defaults(tmp_path):
    script = os.path.join(SCRIPTS, "finetune-wmt14.sh")
    save = str(tmp_path / "save")
    proc = run(["bash", script, "--dry-run", "--num-gpus", "8", "--save-dir", save])
    cmd = proc.stdout
    for flag in (
        "--task translation_from_pretrained_veco", "--arch veco_transformer_large",
        "--lr 1e-4", "--lr-scheduler polynomial_decay", "--warmup-updates 16000",
        "--total-num-update 100000", "--max-update 100000", "--dropout 0.3",
        "--criterion label_smoothed_cross_entropy", "--label-smoothing 0.1",
        "--clip-norm 1.0", "--update-freq 2", "--keep-interval-updates 10",
        "--reset-optimizer --reset-dataloader --reset-meters",
    ):  # fmt: skip
        assert flag in cmd, flag
    assert "0.9" in cmd and "0.98" in cmd
    proc = run(
        [
            "bash",
            script,
            "--dry-run",
            "--pair",
            "en-fr",
            "--max-tokens",
            "3000",
            "--num-gpus",
            "1",
            "--save-dir",
            save,
            "--",
            "--ddp-backend",
            "no_c10d",
        ]
    )
    assert "--lr 2e-4" in proc.stdout and "--update-freq 88" in proc.stdout  # 262144/3000
    assert proc.stdout.rstrip().endswith("--ddp-backend no_c10d")
    # an interrupted run resumes from its own last checkpoint, without resets
    os.makedirs(save)
    open(os.path.join(save, "checkpoint_last.pt"), "w").close()
    proc = run(["bash", script, "--dry-run", "--save-dir", save])
    assert "--restore-file checkpoint_last.pt" in proc.stdout
    assert "--reset-optimizer" not in proc.stdout


def test_finetune_runs_fairseq_train_from_restore_file(wmt, tmp_path):
    """fairseq-train accepts every flag the script passes (stock task/arch here)."""
    save = str(tmp_path / "ft")
    proc = run(
        [
            "bash", os.path.join(SCRIPTS, "finetune-wmt14.sh"),
            "--data-bin", wmt["data"], "--save-dir", save,
            "--restore-file", os.path.join(wmt["ckpt"], "checkpoint_last.pt"),
            "--task", "translation", "--arch", "transformer", "--max-update", "2",
            "--warmup-updates", "1", "--max-tokens", "2000", "--tokens-per-update",
            "3500", "--save-interval-updates", "2", "--user-dir", PLUGIN,
            "--", *TINY, "--disable-validation", "--cpu",
        ]  # fmt: skip
    )
    assert "update-freq 2 = 4000" in proc.stderr
    restored = os.path.join(wmt["ckpt"], "checkpoint_last.pt")
    loaded = rf"Loaded checkpoint {re.escape(restored)} \(epoch \d+ @ 0 updates\)"
    assert re.search(loaded, proc.stdout + proc.stderr), proc.stdout[-3000:]
    # optimizer reset: the update count restarts, so the first save is update 2
    assert os.path.isfile(os.path.join(save, "checkpoint_1_2.pt"))
    shutil.rmtree(save)
