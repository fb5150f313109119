"""Real pre-training data for integration tests, built once per session.

Text: the system's gettext catalogs (tens of thousands of human-translated
English-German strings) when present, else the project's own fixture text.
"""

import glob
import os
import subprocess
import sys

import pytest
from runner import REPO, run

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
