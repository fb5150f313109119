"""Shared fixtures: a tiny VECO model and task built through fairseq's own registries."""

import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER_DIR = os.path.join(REPO, "veco_plugin")
BIN = os.path.dirname(sys.executable)


def fairseq_cmd(name: str) -> str:
    """Path of a console script of the running interpreter's environment."""
    return os.path.join(BIN, name)


@pytest.fixture(scope="session", autouse=True)
def _import_plugin():
    from argparse import Namespace

    from fairseq import utils

    utils.import_user_module(Namespace(user_dir=USER_DIR))
