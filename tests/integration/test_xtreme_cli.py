"""``veco-xtreme``: a checkpoint to its zero-shot table in one command, for each task, through
the real prepare commands, fairseq-train and the scorers: POS on published files
(tests/fixtures/udpos) with the random-initialization row, XQuAD (the stand-in split of
test_span_qa_cli: train on article 1 in English, test article 2 in en/de), PAWS-X's layout
(the gettext paraphrase task); a re-run resumes every finished stage; bad input is one line
before any work."""

import json
import os

import pytest
from fairseq.data.indexed_dataset import MMapIndexedDataset

from tests.helpers.bucc import bucc_folder
from tests.helpers.refusals import ran, refused
from tests.helpers.runner import REPO, run
from veco_plugin.checkpoints.trusted_load import load_trusted
from veco_plugin.cli import gettext_paraphrase, xtreme

FIX = "tests/fixtures/udpos"
UDPOS = [
    "--train", f"{FIX}/train-en.excerpt.tsv", "--dev", f"{FIX}/dev-en.excerpt.tsv",
    "--test", f"en={FIX}/dev-en.excerpt.tsv", "--test", f"de={FIX}/de_gsd-ud-test.excerpt.conllu",
]  # fmt: skip
QUICK = ["--epochs", "2", "--lr", "1e-3"]  # a tiny model learns in two epochs at this rate


def _positions(checkpoint) -> int:
    return int(load_trusted(str(checkpoint))["cfg"]["model"].max_positions)


@pytest.fixture(scope="module")
def checkpoint(pretrain_data, cold_start, tmp_path_factory):
    """The cold start beside its vocabulary (XLM-R's layout: found without flags)."""
    folder = tmp_path_factory.mktemp("pre")
    for name in ("dict.txt", "spm.model"):
        os.symlink(os.path.join(pretrain_data, name), folder / name)
    os.symlink(cold_start, folder / "model.pt")
    return folder / "model.pt"


@pytest.fixture(scope="module")
def benchmark(tmp_path_factory):
    """XTREME's folders, a task each, in veco-xtreme's layout: udpos (the published
    excerpts: English train/dev, English and German test), tatoeba (LASER's files) and
    bucc2018 (XTREME's layout made of LASER's German-English pairs, the test gold kept)."""
    data = tmp_path_factory.mktemp("benchmark")
    (data / "udpos").mkdir()
    for name, path in zip(("train-en.tsv", "dev-en.tsv"), UDPOS[1:4:2]):
        os.symlink(os.path.join(REPO, path), data / "udpos" / name)
    for value in UDPOS[5::2]:
        lang, path = value.split("=")
        os.symlink(os.path.join(REPO, path), data / "udpos" / f"test-{lang}.{path.split('.')[-1]}")
    os.symlink(os.path.join(REPO, "tests/fixtures/tatoeba"), data / "tatoeba")
    (data / "panx").mkdir()  # PAN-X's published layout (lang:word<TAB>tag), hand-made
    for name, file in (
        ("train-en.tsv", "en-train"),
        ("dev-en.tsv", "en-dev"),
        ("test-de.tsv", "de-test"),
    ):
        os.symlink(os.path.join(REPO, "tests/fixtures/panx/handmade", file), data / "panx" / name)
    (data / "bucc2018").mkdir()
    bucc_folder(data / "bucc2018", test_gold=True)
    return data


@pytest.fixture(scope="module")
def udpos(checkpoint, benchmark, tmp_path_factory):
    out = tmp_path_factory.mktemp("xtreme") / "udpos"
    args = ["--task", "udpos", "--checkpoint", f"cold={checkpoint}", "--random-baseline"]
    args += ["--data", benchmark / "udpos"] + QUICK + ["--max-length", _positions(checkpoint)]
    return out, args + ["--out", out], run("veco-xtreme", args + ["--out", out]).stdout


def test_udpos_table_for_the_checkpoint_and_random_initialization(udpos):
    out, _, stdout = udpos
    results = json.loads((out / "results.json").read_text())
    assert list(results["rows"]) == ["cold", "random"] and results["languages"] == ["en", "de"]
    assert results["headline"] == "f1"  # XTREME reports POS in seqeval's F1
    for name, scores in results["rows"].items():
        assert set(scores) == {"accuracy", "f1"}
        # the table is what the scorer wrote
        scored = json.loads((out / name / "scores.json").read_text())[name]
        assert scores["accuracy"] == scored["accuracy"]
        assert scores["accuracy"]["en"] > 40, stdout  # majority tag: 17.9
        assert scores["accuracy"]["avg"] == pytest.approx(
            (scores["accuracy"]["en"] + scores["accuracy"]["de"]) / 2
        )
    assert "| udpos accuracy | en | de | avg |" in (out / "results.md").read_text()
    assert (out / "results.png").stat().st_size > 1000
    # the random row fine-tunes the same shape on the same DATA, without the checkpoint
    log = (out / "logs" / "finetune-random.log").read_text()
    assert "--restore-file" not in log and f"{out}/cold/data" in log
    assert not (out / "random" / "data").exists()
    # the learning rate decays to 0 at the last update (XTREME's linear schedule)
    assert "UPDATES = " in log and "| lr 0 |" in log
    # XTREME's tagger (dropout 0.1, one projection); new random batches each epoch
    assert "--pooler-dropout 0.1" in log and "--random-batches" in log
    assert "creating new batches for epoch 2" in log and "--best-on-ties earlier" in log


def test_a_rerun_skips_every_finished_stage(udpos, capsys):
    out, args, first = udpos
    again = ran(xtreme, args, capsys).stdout
    stages = ["prepare-cold", "finetune-cold", "test-cold", "finetune-random", "test-random"]
    for stage in stages:
        assert f"== [{stage}] finished earlier: skipped" in again
    assert "fairseq_cli.train" not in again
    assert again.split("| udpos accuracy")[1] == first.split("| udpos accuracy")[1]


def test_all_runs_every_task_under_data_and_prints_xtremes_summary(udpos, benchmark):
    """--task all: udpos (finished by the fixture: its stamps skip it), tatoeba and
    bucc2018 (the pre-trained model as it is), then XTREME's summary, a row per checkpoint."""
    out, args, _ = udpos
    at = args.index("--data")
    args = args[:at] + ["--data", benchmark] + args[at + 2 : -2] + ["--out", out.parent]
    args[1] = "all"
    proc = run("veco-xtreme", args)
    assert "== [finetune-cold] finished earlier: skipped" in proc.stdout
    assert "== veco-xtreme tatoeba: 1 row(s) on the CPU" in proc.stdout
    tatoeba = json.loads((out.parent / "tatoeba" / "results.json").read_text())
    assert set(tatoeba["languages"]) == {"de", "fr", "jv", "zh"}  # LASER's four excerpts
    assert list(tatoeba["rows"]) == ["cold"]  # no random row: nothing is fine-tuned
    summary = json.loads((out.parent / "results.json").read_text())
    assert set(summary) == {"cold", "random"}
    cold = summary["cold"]["tasks"]
    udpos_f1 = json.loads((out / "results.json").read_text())["rows"]["cold"]["f1"]
    # the headline is the F1 averaged over XTREME's languages that are here (en, de)
    assert cold["udpos"]["headline"] == pytest.approx((udpos_f1["en"] + udpos_f1["de"]) / 2)
    assert set(cold) == {"udpos", "panx", "tatoeba", "bucc2018"}
    assert set(summary["random"]["tasks"]) == {"udpos", "panx"}  # no random row for retrieval
    panx = json.loads((out.parent / "panx" / "results.json").read_text())
    assert panx["headline"] == "f1" and panx["languages"] == ["de"]
    log = (out.parent / "panx" / "logs" / "finetune-cold.log").read_text()
    assert "--best-checkpoint-metric f1" in log and "--validate-interval-updates 1000" in log
    bucc = json.loads((out.parent / "bucc2018" / "results.json").read_text())["rows"]["cold"]
    assert cold["bucc2018"]["headline"] == bucc["f1"]["de"]  # the test F1, not the sample's
    assert summary["cold"]["overall"] is None  # seven tasks are missing: XTREME gives none
    table = (out.parent / "results.md").read_text()
    assert table.startswith("| model | pawsx | xnli | udpos |") and "| cold |" in table


def test_a_rerun_with_other_settings_is_refused(udpos, capsys):
    out, args, _ = udpos
    changed = [("5e-4" if a == "1e-3" else a) for a in args]
    line = refused(xtreme, changed, "veco-xtreme", capsys)
    assert "stage finetune-cold finished earlier with other settings" in line
    assert "another --out" in line


def _article(lang: str, index: int, path) -> str:
    with open(f"tests/fixtures/xquad/xquad.{lang}.json", encoding="utf-8") as f:
        published = json.load(f)
    path.write_text(json.dumps({"version": "1.1", "data": [published["data"][index]]}))
    return str(path)


def test_xquad_through_the_same_command(checkpoint, tmp_path):
    positions = _positions(checkpoint)
    train = _article("en", 0, tmp_path / "train.en.json")
    tests = {lang: _article(lang, 1, tmp_path / f"test.{lang}.json") for lang in ("en", "de")}
    out = tmp_path / "xquad"
    run(
        "veco-xtreme",
        ["--task", "xquad", "--checkpoint", f"cold={checkpoint}", "--out", out]
        + ["--train", train, "--dev", tests["en"], "--test", f"en={tests['en']}"]
        + ["--test", f"de={tests['de']}", "--epochs", "1", "--warmup-updates", "0"]
        + ["--max-length", positions, "--max-question", positions // 4]
        + ["--doc-stride", positions // 2],
    )
    results = json.loads((out / "results.json").read_text())
    assert set(results["rows"]["cold"]) == {"f1", "em"}
    predictions = json.loads(
        (out / "cold" / "predictions" / "cold" / "predictions.de.json").read_text()
    )
    assert len(predictions) == sum(
        len(p["qas"]) for p in json.load(open(tests["de"]))["data"][0]["paragraphs"]
    )
    assert "| xquad F1 | en | de | avg |" in (out / "results.md").read_text()
    log = (out / "logs" / "finetune-cold.log").read_text()
    assert "--pooler-dropout 0.0" in log  # XTREME's qa_outputs: no dropout


def test_pawsx_layout_through_the_same_command(pretrain_text, checkpoint, tmp_path, capsys):
    if "gettext" not in pretrain_text:
        pytest.skip("no German gettext catalogs")
    tsv = tmp_path / "tsv"
    args = ["--corpus", f"de={pretrain_text}", "--output", tsv, "--max-train", "600"]
    ran(gettext_paraphrase, args + ["--max-eval", "100", "--candidates", "1"], capsys)
    out, positions = tmp_path / "pawsx", _positions(checkpoint)
    run(
        "veco-xtreme",
        ["--task", "pawsx", "--checkpoint", f"cold={checkpoint}", "--out", out]
        + ["--train", tsv / "train.tsv", "--dev", tsv / "valid.tsv"]
        + ["--test", f"en={tsv / 'test_en.tsv'}", "--test", f"de={tsv / 'test_de.tsv'}"]
        + QUICK
        + ["--max-length", str(positions)],
    )
    rows = json.loads((out / "results.json").read_text())["rows"]
    assert set(rows["cold"]["accuracy"]) == {"en", "de", "avg"}
    assert all(0 <= v <= 100 for v in rows["cold"]["accuracy"].values())
    # XTREME's checkpoint choice: the exact dev accuracy, the first of tied ones
    log = (out / "logs" / "finetune-cold.log").read_text()
    assert "--best-checkpoint-metric x_accuracy" in log and "--best-on-ties earlier" in log
    assert "--pooler-dropout 0.1" in log and "--random-batches" in log
    # every pair cut to the window: <s> a </s> + </s> b </s> (a, b binarized with their </s>)
    for split in ("train", "valid", "test_de"):
        # held: sizes is a view of the index's mmap, which the dataset closes when it goes
        first, second = (
            MMapIndexedDataset(str(out / "cold" / "data" / key / split))
            for key in ("input0", "input1")
        )
        assert (first.sizes + second.sizes + 2).max() <= positions


@pytest.mark.parametrize(
    "flags, words",
    [
        (["--max-length", "1000"], "reads at most {p} positions: pass --max-length {p}"),
        (["--test", "de={unlabelled}"], "{unlabelled}:1:"),
        (["--checkpoint", "cold=nothing.pt"], "--checkpoint cold=nothing.pt: no such file"),
        (["--checkpoint", "x={checkpoint}"], "the name x is taken"),
        (["--doc-stride", "64"], "--doc-stride: for --task xquad only"),
        (["--lr", "nan"], "--lr nan: give a positive number"),
        (["--data", "{data}"], "holds 2 train-en.* files: give --train FILE"),
        (
            ["--data", "{twice}"],
            "{twice} holds 2 test-fr.* files (test-fr.a.tsv, test-fr.b.tsv): give --test fr=FILE",
        ),
        (["--out", "{file}"], "--out {file} is a file"),
        (
            ["--", "--no-such-flag"],
            "fairseq-train refuses them: unrecognized arguments: --no-such-flag",
        ),
        (["--task", "tatoeba"], "--train: tatoeba fine-tunes nothing: leave it out"),
        (["--task", "bucc2018", "--data", "{data}"], "test.gold: no such file: XTREME's download"),
    ],
)
def test_bad_input_is_one_line_before_any_work(checkpoint, tmp_path, flags, words, capsys):
    unlabelled = tmp_path / "test-de.tsv"
    unlabelled.write_text("Das\nist\n\nGut\n")
    data = tmp_path / "data"
    data.mkdir()
    for name in ("train-en.tsv", "train-en.conllu"):
        (data / name).write_text("a\tX\n")
    twice = tmp_path / "twice"  # two French test files (#46: the message named --test)
    twice.mkdir()
    for name in ("train-en.tsv", "dev-en.tsv", "test-fr.a.tsv", "test-fr.b.tsv"):
        (twice / name).write_text("a\tX\n")
    taken = tmp_path / "file"
    taken.write_text("")
    names = dict(unlabelled=unlabelled, checkpoint=checkpoint, data=data, file=taken, twice=twice)
    flags = [f.format(**names) for f in flags]
    base = ["--task", "udpos", "--checkpoint", f"x={checkpoint}", "--out", tmp_path / "out"]
    base = ["--max-length", _positions(checkpoint)] + base  # a later --max-length wins
    if "--data" not in flags:
        base += UDPOS[:4] + ["--test", f"en={FIX}/dev-en.excerpt.tsv"]
    if "--out" in flags:
        base = base[:-2]
    if "bucc2018" in flags:  # a BUCC folder without the test gold
        bucc_folder(data, test_gold=False)
        base = [b for b in base if b not in UDPOS[:4]]
    if flags[0] == "--max-length":  # the installed console script, as a user runs it
        proc = run("veco-xtreme", base + flags, check=False)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        stderr = proc.stderr
    else:  # the same entry point in this process: no start-up of torch and fairseq each
        capsys.readouterr()
        with pytest.raises(SystemExit) as stop:
            xtreme.cli_main([str(arg) for arg in base + flags])
        assert stop.value.code == 1
        stderr = capsys.readouterr().err
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("veco-xtreme: error: ")
    assert words.format(p=_positions(checkpoint), **names) in last
    assert not (tmp_path / "out" / "stamps").exists() or not os.listdir(tmp_path / "out/stamps")
