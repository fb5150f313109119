"""Real pre-training data for integration tests, built once per test run (shared by the
pytest-xdist workers: ``tests/helpers/shared.py``).

Text: the system's gettext catalogs (tens of thousands of human-translated
English-German strings) when present, else the project's own fixture text.
"""

import glob
import itertools
import os
import shutil
import subprocess
import sys

import pytest

from tests.helpers.runner import REPO, env, monolingual, pretrain_args, run
from tests.helpers.shared import built_once

FIXTURE_TEXT = os.path.join(REPO, "tests", "fixtures", "text")


def _prepare(text: str, data: str, *flags: str) -> None:
    subprocess.run(
        ["bash", os.path.join(REPO, "scripts", "prepare-pretraining-data.sh")]
        + ["--text", text, "--out", data, *flags],
        check=True,
        capture_output=True,
        env=env(PYTHON=sys.executable),
    )


def _has_catalogs(lang: str) -> bool:
    return bool(glob.glob(f"/usr/share/locale/{lang}/LC_MESSAGES/*.mo"))


@pytest.fixture(scope="session")
def pretrain_text(tmp_path_factory) -> str:
    """TEXT dir: train/valid/test En-De pairs from the gettext catalogs when present,
    else the fixture text."""
    if not _has_catalogs("de"):
        return FIXTURE_TEXT

    def build(out):
        args = ["--tgt-lang", "de", "--output", out / "gettext"]
        run("veco-gettext-corpus", [*args, "--valid-size", "300", "--test-size", "300"])

    return str(built_once(tmp_path_factory, "text", build) / "gettext")


@pytest.fixture(scope="session")
def pretrain_data(pretrain_text, tmp_path_factory) -> str:
    """DATA dir for ``veco_pretraining`` (dict.txt, mono/{en,de}, bi/en-de, spm.model)."""
    shared = built_once(
        tmp_path_factory,
        "pretrain",
        lambda out: _prepare(pretrain_text, str(out / "data"), "--vocab-size", "2000"),
    )
    return str(shared / "data")


@pytest.fixture(scope="session")
def aligned_data(pretrain_text, pretrain_data, tmp_path_factory) -> str:
    """``pretrain_data`` (same spm.model and dict.txt) with eflomal word alignments
    binarized with the bitext (WEAM's input)."""
    spm = os.path.join(pretrain_data, "spm.model")

    def build(out):
        data = str(out / "data")
        _prepare(pretrain_text, data, "--spm-model", spm, "--align-with", "eflomal")
        shutil.copyfile(spm, os.path.join(data, "spm.model"))  # the word lists' default

    return str(built_once(tmp_path_factory, "aligned", build) / "data")


@pytest.fixture(scope="session")
def word_lists(tmp_path_factory):
    """veco-gettext-dictionary's En-De train/held-out word lists (real words)."""
    if not _has_catalogs("de"):
        pytest.skip("no German gettext catalogs")
    return built_once(
        tmp_path_factory,
        "dictionary",
        lambda out: run("veco-gettext-dictionary", ["--tgt-lang", "de", "--output", out]),
    )


@pytest.fixture(scope="session")
def small_data(pretrain_text, pretrain_data, tmp_path_factory) -> str:
    """DATA of the first 2,500 lines of each side of ``pretrain_text`` (a fifteenth) with
    ``pretrain_data``'s sentencepiece model and dictionary: a whole epoch in seconds."""

    def build(out):
        for folder, name, source in (
            ("mono/en", "gettext.txt", "mono.en"),
            ("mono/de", "gettext.txt", "mono.de"),
            ("bi/en-de", "gettext.en", "train.en"),
            ("bi/en-de", "gettext.de", "train.de"),
        ):
            (out / "text" / folder).mkdir(parents=True, exist_ok=True)
            with open(os.path.join(pretrain_text, source), encoding="utf-8") as f:
                lines = list(itertools.islice(f, 2500))
            (out / "text" / folder / name).write_text("".join(lines), encoding="utf-8")
        args = ["--text", out / "text", "--out", out / "data", "--valid-lines", "50"]
        args += ["--spm-model", os.path.join(pretrain_data, "spm.model")]
        args += ["--dict", os.path.join(pretrain_data, "dict.txt")]
        run("veco-prepare-pretraining", args)

    return str(built_once(tmp_path_factory, "small", build) / "data" / "shard0")


COLD_START = ("ca_mlm", 150, "--disable-validation")  # pretrain_args' criterion, updates, ...
COLD_START_LOG = "train.log"  # fairseq-train's stdout, beside the checkpoints


@pytest.fixture(scope="session")
def cold_start(pretrain_data, tmp_path_factory):
    """A veco_tiny checkpoint after 150 ca_mlm updates on ``pretrain_data`` (XLM-Align's
    cold start; also the aligner tests' checkpoint, and test_pretraining's learning run:
    its log is ``COLD_START_LOG`` in the same directory)."""

    def train(out):
        log = run("fairseq-train", pretrain_args(pretrain_data, out, *COLD_START)).stdout
        (out / COLD_START_LOG).write_text(log, encoding="utf-8")

    return built_once(tmp_path_factory, "cold", train) / "checkpoint_last.pt"


# updates of the runs whose word-embedding alignment the tests compare
ALIGNMENT_UPDATES = 150


@pytest.fixture(scope="session")
def plain_mlm(aligned_data, tmp_path_factory):
    """The baseline of the alignment comparisons: the same veco_tiny trained with plain
    MLM (monolingual batches only) for ALIGNMENT_UPDATES on ``aligned_data``."""
    args = ("veco_terms", ALIGNMENT_UPDATES, "--terms", "mono_mlm=1")
    save = built_once(
        tmp_path_factory,
        "plain_mlm",
        lambda out: run("fairseq-train", monolingual(pretrain_args(aligned_data, out, *args))),
    )
    return save / "checkpoint_last.pt"


@pytest.fixture(scope="module")
def shards(pretrain_text, pretrain_data, tmp_path_factory) -> str:
    """``DATA/shard0:DATA/shard1`` as a user makes it: a folder of text (100 En and De
    monolingual lines, 100 En-De pairs) -> ``veco-prepare-pretraining --shards 2`` with
    ``pretrain_data``'s sentencepiece model and dictionary (20 lines of each held out for
    validation, in shard0; 40 of each per shard)."""
    out = tmp_path_factory.mktemp("shards")
    text = out / "text"
    for folder, name, source in (
        ("mono/en", "gettext.txt", "mono.en"),
        ("mono/de", "gettext.txt", "mono.de"),
        ("bi/en-de", "gettext.en", "train.en"),
        ("bi/en-de", "gettext.de", "train.de"),
    ):
        (text / folder).mkdir(parents=True, exist_ok=True)
        with open(os.path.join(pretrain_text, source), encoding="utf-8") as f:
            lines = [next(f) for _ in range(100)]
        (text / folder / name).write_text("".join(lines), encoding="utf-8")
    args = ["--text", text, "--out", out / "data", "--shards", "2", "--valid-lines", "20"]
    args += ["--spm-model", os.path.join(pretrain_data, "spm.model")]
    run("veco-prepare-pretraining", [*args, "--dict", os.path.join(pretrain_data, "dict.txt")])
    return f"{out}/data/shard0:{out}/data/shard1"
