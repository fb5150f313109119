"""veco-retrieve, the real console script, on held-out gettext pairs (never in pre-training):
the cold-start ca_mlm checkpoint against the same architecture at random initialization,
torch == faiss search end to end, one-line errors."""

import json
import os

import pytest
import torch
from fairseq.modules.transformer_sentence_encoder import init_bert_params

from tests.helpers.refusals import refused
from tests.helpers.runner import REPO, run
from veco_plugin.checkpoints.encoder import load_encoder
from veco_plugin.checkpoints.trusted_load import load_trusted
from veco_plugin.cli import retrieve

PROG = "veco-retrieve"


@pytest.fixture(scope="module")
def held_out(pretrain_text):
    """The gettext corpus's test split (pre-training reads train/valid/mono only), else the
    fixture text's valid split."""
    if os.path.isfile(os.path.join(pretrain_text, "test.en")):
        return os.path.join(pretrain_text, "test.en"), os.path.join(pretrain_text, "test.de")
    return f"{REPO}/tests/fixtures/text/valid.en", f"{REPO}/tests/fixtures/text/valid.de"


@pytest.fixture(scope="module")
def random_init(pretrain_data, cold_start, tmp_path_factory):
    """The cold-start checkpoint with every weight re-drawn as fairseq initializes a veco
    model (``init_bert_params``): same architecture, configuration and dictionary."""
    model, _ = load_encoder(str(cold_start), f"{pretrain_data}/dict.txt")
    torch.manual_seed(0)
    model.apply(init_bert_params)
    state = load_trusted(str(cold_start))
    state["model"] = model.state_dict()
    state["last_optimizer_state"] = None
    path = tmp_path_factory.mktemp("random") / "checkpoint_random.pt"
    torch.save(state, path)
    return path


def _retrieve(pretrain_data, held_out, checkpoint, out, *extra):
    src, tgt = held_out
    args = ["--path", checkpoint, "--spm-model", f"{pretrain_data}/spm.model"]
    args += ["--dict", f"{pretrain_data}/dict.txt", "--src", src, "--tgt", tgt, "--cpu"]
    proc = run("veco-retrieve", [*args, "--json", out, "--no-progress", *extra])
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith("src->tgt top-1 accuracy "), proc.stdout
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def accuracies(pretrain_data, held_out, cold_start, random_init, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("retrieve")
    out = {}
    for name, checkpoint in (("trained", cold_start), ("random", random_init)):
        for scoring in ("cosine", "margin"):
            result = _retrieve(
                pretrain_data,
                held_out,
                checkpoint,
                tmp / f"{name}.{scoring}.json",
                "--scoring",
                scoring,
            )
            out[name, scoring] = result
            print(name, scoring, result)
    return out


def test_both_encoders_retrieve_far_above_chance(accuracies):
    for result in accuracies.values():
        assert result["layer"] == 1 and result["search"] == "torch" and result["k"] == 4
        chance = 1 / result["sentences"]
        assert min(result["src2tgt"], result["tgt2src"]) > 20 * chance, result


@pytest.mark.xfail(
    strict=True,
    reason="measured on the 327 held-out gettext En-De pairs (layer 1): 150 ca_mlm updates of "
    "veco_tiny (masked-piece accuracy ~6%) retrieve 11.9/13.1% (cosine, en->de/de->en), the "
    "same encoder at random initialization 15.6/16.2%: random token embeddings, mean-pooled, "
    "match the pieces a pair shares (placeholders, numbers, names), which the trained, "
    "anisotropic embeddings blur; 1200 updates do not close the gap either, nor the quickstart's "
    "1000-update veco run (vocab 4000, its 1000 test pairs): 5.4/6.8% against 14.1/15.3% for "
    "the same encoder at random initialization (xlm 5.3/5.4, align_mlm 7.0/6.7, weam "
    "10.9/9.4); nor does starting from a trained encoder, as users start from XLM-R: 1000 "
    "monolingual MLM updates retrieve 12.8/14.4%, 1600 ca_mlm updates from there 9.5/8.0%",
)
def test_the_cold_start_encoder_beats_random_initialization(accuracies):
    for scoring in ("cosine", "margin"):
        trained, random = accuracies["trained", scoring], accuracies["random", scoring]
        assert trained["src2tgt"] + trained["tgt2src"] > random["src2tgt"] + random["tgt2src"]


def test_faiss_gives_the_torch_results(pretrain_data, held_out, cold_start, accuracies, tmp_path):
    pytest.importorskip("faiss")
    for scoring in ("cosine", "margin"):
        result = _retrieve(
            pretrain_data,
            held_out,
            cold_start,
            tmp_path / "f.json",
            "--scoring",
            scoring,
            "--search",
            "faiss",
            "--batch-size",
            "7",
        )
        # other kernels (faiss) and batches (7, not 64): the states differ by rounding
        # (measured 2.4e-7) and a sentence's two best candidates can be as close as 2.3e-6
        # (measured): each accuracy within one sentence of torch's (equal here), the rest equal
        want = {**accuracies["trained", scoring], "search": "faiss"}
        accuracy = ("src2tgt", "tgt2src")
        assert {k: v for k, v in result.items() if k not in accuracy} == {
            k: v for k, v in want.items() if k not in accuracy
        }
        for key in accuracy:
            assert abs(result[key] - want[key]) <= 1 / want["sentences"] + 1e-9, (key, result)


def _one_line_error(args) -> str:
    proc = run("veco-retrieve", args, check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc.stderr.strip().splitlines()[-1]


def test_bad_input_is_one_line(pretrain_data, held_out, cold_start, tmp_path, capsys):
    """The first through the installed script, the others through its entry point in the
    test process (no start-up of torch each time)."""
    src, _ = held_out
    short = tmp_path / "short.de"
    short.write_text("Ein Satz.\n", encoding="utf-8")
    n = sum(1 for _ in open(src, encoding="utf-8"))
    assert _one_line_error(["--path", cold_start, "--src", src, "--tgt", short]) == (
        f"veco-retrieve: error: --src {src} has {n} lines but --tgt {short} has 1; give "
        "line-aligned files, one sentence per line"
    )
    missing = tmp_path / "missing.pt"
    assert refused(retrieve, ["--path", missing, "--src", src, "--tgt", src], PROG, capsys) == (
        f"veco-retrieve: error: --path {missing}: no such file"
    )
    # a vocabulary neither given, next to the checkpoint nor in its training data:
    # tests/integration/test_checkpoint_vocabulary.py
    args = ["--path", cold_start, "--spm-model", f"{pretrain_data}/spm.model"]
    args += ["--dict", f"{pretrain_data}/dict.txt", "--src", src, "--tgt", src, "--layer", "5"]
    assert refused(retrieve, args, PROG, capsys) == (
        "veco-retrieve: error: --layer 5: the model has layers 0..2 (0: embeddings)"
    )
