"""``veco-derived-transfer --smoke`` as installed, through the real console scripts: every
stage runs (XLM with language embeddings and the code-switched DICT-MLM among the objectives),
results.json holds the Δ table in F1 (accuracy beside) with alignment scores in [0, 1]
(inside and outside the dictionary, after ZS fine-tuning, with language vectors for XLM+LID)
and ρ, a re-run skips every stage, an interrupted pre-training continues from its last
checkpoint; bad input is one line before any work."""

import json
import re

import pytest

from tests.helpers.refusals import ran, refused
from tests.helpers.runner import run
from veco_plugin.cli import derived_transfer

PROG = "veco-derived-transfer"
FIX = "tests/fixtures/udpos"
TRANSFORMS = ("trans_inv",)  # T_trans: the README's toy block and the curve below
OBJECTIVES = ("mlm", "xlm_lid", "dict_mlm", "align_mlm")
FLAGS = [
    "--smoke", "--jobs", "2",
    "--text", "tests/fixtures/text/mono.en", "--text", "tests/fixtures/text/train.en",
    "--tagged-train", f"{FIX}/train-en.excerpt.tsv", "--tagged-dev", f"{FIX}/dev-en.excerpt.tsv",
    "--tagged-test", f"{FIX}/en_ewt-ud-dev.excerpt.conllu",
    "--transforms", ",".join(TRANSFORMS), "--objectives", ",".join(OBJECTIVES),
]  # fmt: skip


def stages():
    shared = ["corpus", "spm", "derive"]
    for t in TRANSFORMS:
        shared += [f"data-{t}", f"prepare-{t}-en", f"prepare-{t}-der"]
    for t in TRANSFORMS:
        for o in OBJECTIVES:
            shared += [f"pretrain-{t}-{o}", f"align-{t}-{o}"]
            shared += [f"finetune-{t}-{o}-zs", f"align-{t}-{o}-zs", f"test-{t}-{o}-zs"]
            shared += [f"finetune-{t}-{o}-sup", f"test-{t}-{o}-sup"]
    return shared


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("derived-transfer") / "run"
    first = run(PROG, ["--out", out] + FLAGS, timeout=600)
    return out, first


def test_every_stage_runs_and_the_table_is_written(smoke):
    out, first = smoke
    done = re.findall(r"^== \[(\S+)\] \S+ done in", first.stdout, re.M)
    assert sorted(done) == sorted(stages())
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert set(results["table"]) == set(TRANSFORMS) and results["metric"] == "f1"
    for t in TRANSFORMS:
        assert set(results["table"][t]) == set(OBJECTIVES)
        for objective, row in results["table"][t].items():
            for metric in ("sup", "zs", "sup_accuracy", "zs_accuracy"):
                assert 0 <= row[metric] <= 100
            assert row["delta"] == pytest.approx(row["sup"] - row["zs"])
            assert row["delta_accuracy"] == pytest.approx(row["sup_accuracy"] - row["zs_accuracy"])
            for key in ("alignment", "alignment_dictionary", "alignment_outside",
                        "alignment_tuned"):  # fmt: skip
                assert 0.0 <= row[key] <= 1.0
            lid = objective.endswith("_lid")
            assert (row["alignment_languages"] is not None) == lid
            assert (row["alignment_sampled"] is not None) == lid
        scores = json.loads((out / "pos" / f"{t}-mlm-zs" / "scores.json").read_text())
        assert set(scores[f"{t}-mlm-zs"]["f1"]) - {"avg"} == {"der"}  # the derived dev file
        command = (out / "stamps" / f"test-{t}-mlm-zs.done").read_text()
        assert f"derived/{t}/pos-dev.tsv" in command and "checkpoint_last.pt" in command
    pretrain = json.loads((out / "stamps" / "pretrain-trans_inv-dict_mlm.done").read_text())[
        "command"
    ]
    assert pretrain[pretrain.index("--dict-mlm-mode") + 1] == "code_switch"
    rho = results["spearman_alignment_delta"]
    assert rho is None or -1.0 <= rho <= 1.0
    assert "T_trans∘T_inv: SUP / ZS / Δ" in first.stdout and "Spearman ρ" in first.stdout
    assert (out / "results.png").stat().st_size > 0
    for t in TRANSFORMS:
        assert (out / "data" / t / "bi" / "en-der").is_dir()


def test_a_rerun_skips_every_stage(smoke, capsys):
    out, first = smoke
    again = ran(derived_transfer, ["--out", out] + FLAGS, capsys).stdout
    skipped = re.findall(r"^== \[(\S+)\] finished earlier: skipped", again, re.M)
    assert sorted(skipped) == sorted(stages())
    assert " start (log:" not in again
    assert (out / "results.md").read_text(encoding="utf-8") in again


def test_an_interrupted_pretraining_continues_from_its_last_checkpoint(smoke):
    """A pre-training stopped before its stamp resumes its checkpoint_last.pt (a save dir
    some other command left is started afresh: tests/unit/test_xtreme_stages.py)."""
    out, _ = smoke
    stamp = out / "stamps" / "pretrain-trans_inv-mlm.done"
    log = out / "logs" / "pretrain-trans_inv-mlm.log"
    loaded = re.compile(r"Loaded checkpoint \S+ \(epoch \d+ @ 8 updates\)")

    for name in stages():  # the model's pipeline before its pre-training was stamped
        if "-trans_inv-mlm" in name:
            (out / "stamps" / f"{name}.done").unlink()
    again = run(PROG, ["--out", out] + FLAGS, timeout=300)
    assert "[pretrain-trans_inv-mlm] continuing the interrupted run" in again.stdout
    assert len(loaded.findall(log.read_text(encoding="utf-8"))) == 1
    assert stamp.is_file() and (out / "results.md").read_text(encoding="utf-8") in again.stdout


def test_other_settings_on_the_same_out_are_refused(smoke, capsys):
    out, _ = smoke
    args = ["--out", out] + FLAGS + ["--dictionary-coverage", "0.5"]
    assert "finished earlier with other settings" in refused(derived_transfer, args, PROG, capsys)


def test_bad_input_is_one_line_before_any_work(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("The\tDET\ncat\n\n", encoding="utf-8")
    args = ["--out", tmp_path / "run", "--tagged-train", bad,
            "--tagged-dev", f"{FIX}/dev-en.excerpt.tsv",
            "--tagged-test", f"{FIX}/en_ewt-ud-dev.excerpt.conllu"]  # fmt: skip
    proc = run(PROG, args, check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"{PROG}: error: ") and f"{bad}:2" in proc.stderr
    assert not (tmp_path / "run").exists()


def test_veco_xtreme_reads_language_embeddings_from_the_weights(smoke):
    """A checkpoint with XLM's language embeddings fine-tunes with them: veco-xtreme's
    model flags, read from the weights, carry their count."""
    from veco_plugin.xtreme.models import describe

    out, _ = smoke
    flags = {}
    for objective in ("xlm_lid", "mlm"):
        path = out / "pretrain" / f"trans_inv-{objective}" / "checkpoint_last.pt"
        row = describe(objective, str(path), str(out / "spm.model"),
                       str(out / "derived" / "dict.txt"))  # fmt: skip
        flags[objective] = " ".join(row.model_flags)
    assert flags["xlm_lid"].endswith("--language-embeddings 2")
    assert "--language-embeddings" not in flags["mlm"]
