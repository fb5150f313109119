"""Real pre-training data for integration tests, built once per session.

Text: the system's gettext catalogs (tens of thousands of human-translated
English-German strings) when present, else the project's own fixture text.
"""

import glob
import os
import shutil
import subprocess
import sys

import pytest

from tests.helpers.runner import REPO, monolingual, pretrain_args, run

FIXTURE_TEXT = os.path.join(REPO, "tests", "fixtures", "text")


def _text_dir(tmp: str) -> str:
    if glob.glob("/usr/share/locale/de/LC_MESSAGES/*.mo"):
        out = os.path.join(tmp, "gettext")
        run(
            "veco-gettext-corpus",
            ["--tgt-lang", "de", "--output", out, "--valid-size", "300", "--test-size", "300"],
        )
        return out
    return FIXTURE_TEXT


def _prepare(text: str, data: str, *flags: str) -> None:
    subprocess.run(
        ["bash", os.path.join(REPO, "scripts", "prepare-pretraining-data.sh")]
        + ["--text", text, "--out", data, *flags],
        check=True,
        capture_output=True,
        env=dict(
            os.environ,
            PYTHON=sys.executable,
            PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
        ),
    )


@pytest.fixture(scope="session")
def pretrain_text(tmp_path_factory) -> str:
    """TEXT dir: train/valid/test En-De pairs."""
    return _text_dir(str(tmp_path_factory.mktemp("text")))


@pytest.fixture(scope="session")
def pretrain_data(pretrain_text, tmp_path_factory) -> str:
    """DATA dir for ``veco_pretraining`` (dict.txt, mono/{en,de}, bi/en-de, spm.model)."""
    data = os.path.join(str(tmp_path_factory.mktemp("pretrain")), "data")
    _prepare(pretrain_text, data, "--vocab-size", "2000")
    return data


@pytest.fixture(scope="session")
def aligned_data(pretrain_text, pretrain_data, tmp_path_factory) -> str:
    """``pretrain_data`` (same spm.model and dict.txt) with eflomal word alignments
    binarized with the bitext (WEAM's input)."""
    data = os.path.join(str(tmp_path_factory.mktemp("aligned")), "data")
    spm = os.path.join(pretrain_data, "spm.model")
    _prepare(pretrain_text, data, "--spm-model", spm, "--align-with", "eflomal")
    shutil.copyfile(spm, os.path.join(data, "spm.model"))  # the word lists' default
    return data


@pytest.fixture(scope="session")
def word_lists(tmp_path_factory):
    """veco-gettext-dictionary's En-De train/held-out word lists (real words)."""
    if not glob.glob("/usr/share/locale/de/LC_MESSAGES/*.mo"):
        pytest.skip("no German gettext catalogs")
    out = tmp_path_factory.mktemp("dictionary")
    run("veco-gettext-dictionary", ["--tgt-lang", "de", "--output", str(out)])
    return out


@pytest.fixture(scope="session")
def cold_start(pretrain_data, tmp_path_factory):
    """A veco_tiny checkpoint after 150 ca_mlm updates on ``pretrain_data`` (XLM-Align's
    cold start; also the aligner tests' checkpoint)."""
    save = tmp_path_factory.mktemp("cold")
    run("fairseq-train", pretrain_args(pretrain_data, save, "ca_mlm", 150, "--disable-validation"))
    return save / "checkpoint_last.pt"


# updates of the runs whose word-embedding alignment the tests compare
ALIGNMENT_UPDATES = 150


@pytest.fixture(scope="session")
def plain_mlm(aligned_data, tmp_path_factory):
    """The baseline of the alignment comparisons: the same veco_tiny trained with plain
    MLM (monolingual batches only) for ALIGNMENT_UPDATES on ``aligned_data``."""
    save = tmp_path_factory.mktemp("plain_mlm")
    args = pretrain_args(
        aligned_data, save, "veco_terms", ALIGNMENT_UPDATES, "--terms", "mono_mlm=1"
    )
    run("fairseq-train", monolingual(args))
    return save / "checkpoint_last.pt"
