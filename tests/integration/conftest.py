"""Real pre-training data for integration tests, built once per session.

Text: the system's gettext catalogs (tens of thousands of human-translated
English-German strings) when present, else the project's own fixture text.
"""

import glob
import os
import subprocess
import sys

import pytest

from tests.helpers.runner import REPO, pretrain_args, run

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


@pytest.fixture(scope="session")
def pretrain_data(tmp_path_factory) -> str:
    """DATA dir for ``veco_pretraining`` (dict.txt, mono/{en,de}, bi/en-de, spm.model)."""
    tmp = str(tmp_path_factory.mktemp("pretrain"))
    data = os.path.join(tmp, "data")
    subprocess.run(
        [
            "bash",
            os.path.join(REPO, "scripts", "prepare-pretraining-data.sh"),
            "--text",
            _text_dir(tmp),
            "--out",
            data,
            "--vocab-size",
            "2000",
        ],
        check=True,
        capture_output=True,
        env=dict(
            os.environ,
            PYTHON=sys.executable,
            PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
        ),
    )
    return data


@pytest.fixture(scope="session")
def cold_start(pretrain_data, tmp_path_factory):
    """A veco_tiny checkpoint after 150 ca_mlm updates on ``pretrain_data`` (XLM-Align's
    cold start; also the aligner tests' checkpoint)."""
    save = tmp_path_factory.mktemp("cold")
    run("fairseq-train", pretrain_args(pretrain_data, save, "ca_mlm", 150, "--disable-validation"))
    return save / "checkpoint_last.pt"
