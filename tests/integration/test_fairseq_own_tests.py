"""fairseq's own tests guard the plugin's patches of fairseq.

Importing the plugin wraps fairseq functions process-wide (checkpoint reading and
resuming, the save-dir lock, one-line errors, warning filters). Every test module of
the installed fairseq's source distribution runs twice, without the plugin and with it
imported (``pytest -p veco_plugin``, what ``--user-dir veco_plugin`` does to a process):
a test that passes without the plugin passes with it.
"""

import subprocess
import sys
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from typing import Dict

import pytest

from tests.helpers.fairseq_sdist import fairseq_tests
from tests.helpers.runner import WARM, env

# not run: xformers (not installed), the Hugging Face hub (network), and 25 s of
# batching baselines that touch nothing the plugin wraps
SKIP = "not xformers and not hf_hub and not compare_with_baseline and not multi_corpus_dataset"


def _outcomes(root: str, tmp_path, *plugin: str) -> Dict[str, str]:
    """{test id: passed / failed / skipped} of fairseq's tests in one pytest process."""
    report = tmp_path / f"fairseq{'-'.join(plugin)}.xml"
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore",
            "--continue-on-collection-errors", "-k", SKIP,
            f"--junitxml={report}", *plugin, "tests"]  # fmt: skip
    # forked from the tests' zygote (torch and fairseq imported, not the plugin)
    proc = WARM.popen(argv, env(), cwd=root)
    if proc is None:
        subprocess.run(argv, cwd=root, capture_output=True, env=env(), timeout=900)
    else:
        proc.communicate(900)
    outcomes = {}
    for case in ET.parse(report).iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        outcomes[name] = (
            "failed" if kinds & {"failure", "error"} else "skipped" if "skipped" in kinds
            else "passed"
        )  # fmt: skip
    return outcomes


def test_the_plugin_turns_no_fairseq_test_from_pass_to_fail(tmp_path):
    try:
        root = fairseq_tests()
    except OSError as exc:
        pytest.skip(f"fairseq's source distribution is out of reach: {exc}")
    with ThreadPoolExecutor(2) as pool:
        runs = pool.map(
            lambda plugin: _outcomes(root, tmp_path, *plugin), [(), ("-p", "veco_plugin")]
        )
        without, with_plugin = list(runs)
    passed = {name for name, outcome in without.items() if outcome == "passed"}
    broken = sorted(name for name in passed if with_plugin.get(name) != "passed")
    assert not broken, f"the plugin breaks {len(broken)} fairseq tests: {broken[:10]}"
    # the checkpoint-loading tests its resume and save-dir wrappers once broke ran here
    assert any("TestLoadCheckpoint" in name for name in passed), sorted(passed)[:20]
    assert len(passed) >= 50, f"only {len(passed)} fairseq tests ran"
