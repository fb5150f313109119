"""Registers the plugin with fairseq once per session (as ``--user-dir veco_plugin`` does)."""

import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER_DIR = os.path.join(REPO, "veco_plugin")


@pytest.fixture(scope="session", autouse=True)
def _import_plugin():
    from argparse import Namespace

    from fairseq import utils

    utils.import_user_module(Namespace(user_dir=USER_DIR))
