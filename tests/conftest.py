"""Registers the plugin with fairseq once per session (as ``--user-dir veco_plugin`` does)."""

import logging
import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER_DIR = os.path.join(REPO, "veco_plugin")


@pytest.fixture(autouse=True)
def _root_logging_restored():
    """The root logger's handlers and level as they were before the test. A command run
    through its entry point in the test process sets them (``logging.basicConfig(force=True,
    stream=sys.stderr)``: this test's captured stream); left there, a later test's logging
    writes to a closed stream and prints "--- Logging error ---" with a traceback. pytest's
    own capture handlers (added and removed per phase) are left to pytest."""
    root = logging.getLogger()

    def ours(handlers):
        return [h for h in handlers if not type(h).__module__.startswith("_pytest")]

    handlers, level = ours(root.handlers), root.level
    yield
    root.handlers[:] = handlers + [h for h in root.handlers if h not in ours(root.handlers)]
    root.setLevel(level)


@pytest.fixture(scope="session", autouse=True)
def _import_plugin():
    from argparse import Namespace

    from fairseq import utils

    utils.import_user_module(Namespace(user_dir=USER_DIR))


# The modules that run whole pipelines, slowest first (make test's --durations). ``make test``
# hands whole modules to its two workers (--dist loadfile) in collection order
# (--no-loadscope-reorder: xdist would otherwise start with the modules of most tests, the
# short unit modules, and leave these for last, where one of them can keep a worker busy
# long after the other has ended); started first, they end while the other worker runs the
# many short modules.
SLOWEST_FIRST = (
    "tests/integration/test_xtreme_cli.py",
    "tests/integration/test_derived_transfer_cli.py",
    "tests/integration/test_quickstart_smoke.py",
    "tests/integration/test_sentence_prediction_training.py",
    "tests/integration/test_sharded_pretraining.py",
    "tests/unit/test_data_parallel.py",
    "tests/integration/test_weam_training.py",
    "tests/integration/test_wmt14_scripts.py",
    "tests/integration/test_checkpoint_kills.py",
    "tests/integration/test_doc_toy_blocks.py",
    "tests/integration/test_wmt14_veco_e2e.py",
    "tests/integration/test_bad_input.py",
    "tests/integration/test_pretraining.py",
    "tests/integration/test_bad_input_more.py",
    "tests/integration/test_init_nmt_cli.py",
    "tests/integration/test_prepare_pretraining_cli.py",
    "tests/unit/test_errors.py",
    "tests/unit/test_gpu_benchmark_dry_run.py",
)


def pytest_collection_modifyitems(items):
    rank = {module: i for i, module in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))
