"""POS tagging from a checkpoint to the zero-shot table, through the real console scripts:
``veco-prepare-tagging`` on published files (tests/fixtures/udpos: XTREME's English udpos
TSVs, the UD German GSD treebank), ``fairseq-train --task veco_tagging`` from the
``cold_start`` pre-training checkpoint (150 ca_mlm updates on the gettext En-De corpus), and
``veco-tag-eval``: English dev far above the majority tag, and German, never seen in
fine-tuning, tagged zero-shot. The checkpoint kept is the one of the best English dev F1
(seqeval's, logged by validation), as XTREME's ``run_tag.py`` keeps it."""

import json
from collections import Counter

import pytest

from tests.helpers.refusals import refused
from tests.helpers.runner import USER_DIR, json_logs, run
from veco_plugin.checkpoints.trusted_load import load_trusted
from veco_plugin.cli import tag_eval
from veco_plugin.corpora.subwords import load_sentencepiece
from veco_plugin.corpora.tagging import read_tagged, read_tagged_tsv
from veco_plugin.corpora.tagging_data import encode_windows
from veco_plugin.evaluation.tagging_scores import chunk_counts, f1_of_counts

FIX = "tests/fixtures/udpos"
TRAIN, DEV = f"{FIX}/train-en.excerpt.tsv", f"{FIX}/dev-en.excerpt.tsv"
GERMAN = f"{FIX}/de_gsd-ud-test.excerpt.conllu"
EPOCHS = 4


def _positions(checkpoint) -> int:
    state = load_trusted(str(checkpoint))
    return int(state["cfg"]["model"].max_positions)


@pytest.fixture(scope="module")
def tagged(pretrain_data, cold_start, tmp_path_factory):
    """DATA, the fine-tuned checkpoint and fairseq-train's output."""
    out = tmp_path_factory.mktemp("tagging")
    positions = _positions(cold_start)
    data = out / "data"
    run(
        "veco-prepare-tagging",
        ["--spm-model", f"{pretrain_data}/spm.model", "--dict", f"{pretrain_data}/dict.txt"]
        + ["--output", data, "--split", f"train={TRAIN}", "--split", f"valid={DEV}"]
        + ["--max-length", positions],
    )
    train = run(
        "fairseq-train",
        [data, "--user-dir", USER_DIR, "--task", "veco_tagging", "--criterion", "veco_tagging"]
        + ["--arch", "veco_tiny", "--max-positions", positions, "--restore-file", cold_start]
        + ["--reset-optimizer", "--reset-dataloader", "--reset-meters", "--reset-lr-scheduler"]
        + ["--optimizer", "adam", "--lr", "1e-3", "--lr-scheduler", "fixed", "--batch-size", 32]
        + ["--max-epoch", EPOCHS, "--dropout", "0.1", "--cpu", "--num-workers", "0"]
        # every window in a batch (fairseq's default 8 drops a last batch's windows past a
        # multiple of 8: 3 of the 67 dev windows; XTREME's loaders keep them)
        + ["--required-batch-size-multiple", "1"]
        + ["--best-checkpoint-metric", "f1", "--maximize-best-checkpoint-metric"]
        + ["--no-epoch-checkpoints", "--save-dir", out / "ckpt", "--log-format", "json"]
        + ["--log-interval", "10", "--seed", "1"],
    )
    return data, out / "ckpt" / "checkpoint_best.pt", train.stdout, positions


def _majority(path) -> float:
    tags = Counter(t for s in read_tagged([TRAIN]) for t in s.tags).most_common(1)[0][0]
    gold = [t for s in read_tagged([path]) for t in s.tags]
    return 100 * sum(t == tags for t in gold) / len(gold)


def _best(log):
    """The valid records and the index of the one checkpoint_best.pt holds (fairseq keeps
    the later of equal scores)."""
    valid = json_logs(log, "valid")
    f1 = [float(v["f1"]) for v in valid]
    return valid, max(i for i, v in enumerate(f1) if v == max(f1))


def test_english_learns_and_german_is_tagged_zero_shot(tagged, tmp_path):
    data, checkpoint, log, positions = tagged
    valid, best = _best(log)
    assert len(valid) == EPOCHS and valid[-1]["accuracy"] > valid[0]["accuracy"]
    scores = tmp_path / "scores.json"
    out = run(
        "veco-tag-eval",
        ["--data", data, "--checkpoint", f"cold={checkpoint}", "--test", f"en={DEV}"]
        + ["--test", f"de={GERMAN}", "--json", scores]  # the windows DATA was written with
        + ["--predictions", tmp_path / "pred"],
    ).stdout
    result = json.loads(scores.read_text())["cold"]
    shown = f"{out}\nmajority tag: en {_majority(DEV):.1f}, de {_majority(GERMAN):.1f}"
    # measured here: en 61.4 (majority tag 17.9), de 20.0 (17.0), F1 54.6 / 15.9: 150
    # updates of pre-training on gettext strings transfer little to German treebank text
    assert result["accuracy"]["en"] > _majority(DEV) + 40, shown
    assert result["accuracy"]["de"] > _majority(GERMAN), shown
    assert abs(result["accuracy"]["en"] - float(valid[best]["accuracy"])) < 1.0
    predicted = read_tagged(
        [str(tmp_path / "pred" / "cold" / "de" / "de_gsd-ud-test.excerpt.conllu")]
    )
    assert [s.words for s in predicted] == [s.words for s in read_tagged([GERMAN])]


def test_validation_f1_keeps_the_best_checkpoint_and_is_the_scorers(tagged, tmp_path):
    """valid logs ``f1`` every epoch; checkpoint_best.pt is the epoch of the best one, and
    its F1 is tagging_scores' F1 of the checkpoint's own predictions of the dev words
    (``veco-tag-eval --predictions``), each window DATA cut the dev split into counted
    apart, as validation counts them."""
    data, checkpoint, log, positions = tagged
    valid, best = _best(log)
    state = load_trusted(str(checkpoint))["extra_state"]
    # saved at the end of its epoch: the iterator's state names the next one
    assert state["train_iterator"]["epoch"] - 1 == valid[best]["epoch"] == best + 1
    assert float(f"{state['val_loss']:g}") == valid[best]["f1"] == valid[-1]["best_f1"]
    run(
        "veco-tag-eval",
        ["--data", data, "--checkpoint", f"best={checkpoint}", "--test", f"en={DEV}"]
        + ["--predictions", tmp_path / "pred"],
    )
    predicted = read_tagged_tsv(str(tmp_path / "pred" / "best" / "en" / "dev-en.excerpt.tsv"))
    gold = read_tagged([DEV])
    windows = encode_windows(load_sentencepiece(f"{data}/spm.model"), gold, positions)
    counts = []
    for w in windows:
        words = range(w.first_word, w.first_word + len(w.starts))
        pair = [[sentences[w.sentence].tags[i] for i in words] for sentences in (gold, predicted)]
        counts.append(chunk_counts([pair[0]], [pair[1]]))  # the window as a sentence
    summed = [sum(c[k] for c in counts) for k in range(3)]
    # exact on a measured margin: veco-tag-eval batches the windows in file order,
    # validation by length, so their logits differ by rounding (~1e-6), but every dev word's
    # best tag is ahead by >= 1.5e-3 (measured, 1382 words); a tolerance could not tell the
    # windows' counting from the joined split's (55.21 vs 55.13 here: 2 chunks)
    assert state["val_loss"] == 100 * f1_of_counts(*summed)


@pytest.mark.parametrize(
    "flags, words",
    [
        (["--max-length", "1000"], "its model reads at most {p} positions, the windows are 1000"),
        (["--predictions", "{file}"], "--predictions {file} is a file, not a directory"),
    ],
)
def test_evaluation_refuses_windows_too_long_and_a_file_for_predictions(
    tagged, tmp_path, flags, words, capsys
):
    """Through veco-tag-eval's entry point in the test process (no start-up of torch)."""
    data, checkpoint, _, positions = tagged
    taken = tmp_path / "taken"
    taken.write_text("x")
    flags = [f.format(file=taken) for f in flags]
    args = ["--data", data, "--checkpoint", f"c={checkpoint}", "--test", f"en={DEV}", *flags]
    last = refused(tag_eval, args, "veco-tag-eval", capsys)
    assert words.format(p=positions, file=taken) in last
