"""scripts/setup-env.sh builds fairseq against the venv's own torch and prints no ``ERROR:``.

Issue 30: ``pip install fairseq-fixed`` from its sdist in pip's isolated build environment
downloaded a second, CUDA torch just to compile fairseq's extensions (~8.5 min cold), and
installing the plugin after fairseq made pip's resolver print ``ERROR: ... fairseq-fixed
requires ... torchaudio`` for an install that worked. Now fairseq's build requirements
(torch pinned among them) come first, fairseq's wheel is built with --no-build-isolation
--no-deps (beside the plugin's install), and fairseq is installed last, with --no-deps; a
``pip check`` of every installed package (in place of pip's partial after-install report,
--no-warn-conflicts) names the one requirement left out (torchaudio) and prints the rest.

The script's control flow runs for real; the venv's python is a stub that logs its calls
(the real set-up needs the package registries and minutes: ``make setup``).
"""

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TORCHAUDIO = "fairseq-fixed 0.12.3.1 requires torchaudio, which is not installed."
STUB_PYTHON = r"""#!/usr/bin/env bash
log="$(dirname "$0")/calls.log"
if [[ "$1 $2 $3" == "-m pip wheel" ]]; then
  echo "CFLAGS=${CFLAGS-} $*" >> "$log"
  if [[ -n ${STUB_WHEEL_FAIL-} ]]; then echo "ERROR: Failed to build fairseq-fixed" >&2; exit 1; fi
  prev=; for a in "$@"; do [[ $prev == -w ]] && dir=$a; prev=$a; done
  touch "$dir/fairseq_fixed-0.12.3.1-cp311-cp311-linux_x86_64.whl"
  exit 0
fi
echo "$*" >> "$log"
case "$1 $2 $3" in
  "-m pip check") printf '%s\n' "$STUB_PIP_CHECK"; exit 1 ;;
  "-m pip install") [[ "$*" != *" -e "* ]] || printf '%s' "${STUB_EDITABLE_STDERR-}" >&2; exit 0 ;;
esac
case "$2" in
  "import sys; sys.exit"*) exit 0 ;;  # Python >= 3.11: fairseq-fixed
  *sysconfig*) echo "-DNDEBUG -g -O3 -Wall"; exit 0 ;;
  "import fairseq") [[ -n ${STUB_HAS_FAIRSEQ-} ]]; exit ;;
  *veco_plugin*) echo "ok: torch 2.13.0+cpu fairseq 0.12.3.1"; exit 0 ;;
esac
exit 0
"""


@pytest.fixture
def venv(tmp_path):
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(STUB_PYTHON)
    python.chmod(0o755)
    return python.parent.parent


def _setup(venv, **stub_env):
    env = {k: v for k, v in os.environ.items() if k != "CFLAGS"}
    env.update({"STUB_PIP_CHECK": TORCHAUDIO, **stub_env})
    return subprocess.run(
        ["bash", str(REPO / "scripts" / "setup-env.sh"), "--venv", str(venv)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _calls(venv):
    return (venv / "bin" / "calls.log").read_text().splitlines()


def _index(calls, predicate):
    found = [i for i, call in enumerate(calls) if predicate(call)]
    assert len(found) == 1, calls
    return found[0]


def test_fairseq_built_against_the_venvs_torch_and_installed_last(venv):
    proc = _setup(venv)
    assert proc.returncode == 0, proc.stderr
    assert "ERROR" not in proc.stdout + proc.stderr and proc.stderr == ""
    assert "torchaudio, which fairseq-fixed==0.12.3.1 declares, is left out" in proc.stdout
    calls = _calls(venv)
    build_reqs = _index(calls, lambda c: "cython" in c and "-m pip install" in c)
    words = calls[build_reqs].split()
    assert {"setuptools", "wheel", "cython", "numpy<2", "torch==2.13.0"} <= set(words)
    wheel = _index(calls, lambda c: "-m pip wheel" in c)
    assert build_reqs < wheel
    for flag in ("--no-build-isolation", "--no-deps", "--check-build-dependencies"):
        assert flag in calls[wheel].split()
    assert "fairseq-fixed==0.12.3.1" in calls[wheel].split()
    cflags = calls[wheel].split(" -m pip")[0]
    assert "-O3" in cflags and cflags.endswith(" -g0")  # no debug info, optimized
    # fairseq's spec is only ever built without isolation: no isolated build, no 2nd torch
    assert all("--no-build-isolation" in c for c in calls if "fairseq-fixed==" in c)
    plugin = _index(calls, lambda c: f"-e {REPO}[test]" in c)
    assert "fairseq" not in calls[plugin]
    # pip's partial after-install report (an ERROR: for fairseq's torchaudio on a re-run) is
    # replaced by the full `pip check` at the end
    assert "--no-warn-conflicts" in calls[plugin].split()
    fairseq = _index(calls, lambda c: "fairseq_fixed-0.12.3.1-cp311" in c)
    assert "--no-deps" in calls[fairseq].split()
    assert max(plugin, wheel) < fairseq < _index(calls, lambda c: "-m pip check" in c)


def test_pip_check_prints_everything_but_torchaudio(venv):
    other = "foo 1.0 requires bar, which is not installed."
    proc = _setup(venv, STUB_PIP_CHECK=f"{TORCHAUDIO}\n{other}")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [other]


# what pip relayed from setuptools' build backend on a cold `make setup` (issue 40)
EDITABLE_BOX = """\
  /tmp/pip-build-env-x/overlay/lib/python3.11/site-packages/setuptools/command/editable_wheel.py:354: BuildBackendWarning: Editable installation.
  !!

          ********************************************************************************
          Please be careful with folders in your working directory with the same
          name as your package as they may take precedence during imports.
          ********************************************************************************

  !!
    with strategy, WheelFile(wheel_path, "w") as wheel_obj:
"""  # noqa: E501


def test_setuptools_editable_notice_is_dropped_and_nothing_else(venv):
    real = "WARNING: a real problem pip reports"
    proc = _setup(venv, STUB_EDITABLE_STDERR=f"{real}\n{EDITABLE_BOX}ERROR: another\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [real, "ERROR: another"]
    proc = _setup(venv, STUB_EDITABLE_STDERR=EDITABLE_BOX)
    assert proc.stderr == "" and "ok: torch" in proc.stdout


def test_a_failed_build_fails_the_setup(venv):
    proc = _setup(venv, STUB_WHEEL_FAIL="1")
    assert proc.returncode != 0
    assert "ERROR: Failed to build fairseq-fixed" in proc.stderr
    assert "building fairseq-fixed==0.12.3.1 failed" in proc.stderr
    assert not any("fairseq_fixed-" in call for call in _calls(venv))


def test_an_installed_fairseq_is_kept(venv):
    proc = _setup(venv, STUB_HAS_FAIRSEQ="1")
    assert proc.returncode == 0, proc.stderr
    assert not any("fairseq" in call for call in _calls(venv) if "-m pip" in call)


def test_help_lists_the_flags():
    proc = subprocess.run(
        ["bash", str(REPO / "scripts" / "setup-env.sh"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and all(f in proc.stdout for f in ("--venv", "--python", "--torch"))
