"""scripts/install-fastbpe.sh picks the interpreter as the README's commands need: the
active venv's python, else the project's .venv (was: whatever ``python`` was first on
PATH), and a relative ``--python`` / ``--fixture`` keep working after the script changes
directory (was: ``.venv/bin/python: No such file or directory`` after installing).

The script's control flow runs for real on a copy of the project; the interpreter and the
C++ compiler are stubs that log their calls (the real build needs PyPI and ~20 s:
``bash scripts/install-fastbpe.sh`` itself).
"""

import io
import os
import shutil
import subprocess
import tarfile

import pytest

from tests.helpers.runner import REPO

STUB_PYTHON = """#!/usr/bin/env bash
args="$*"
echo "$PWD $0 ${args//$'\n'/ }" >> "$(dirname "$0")/calls.log"
[[ $1 == - ]] && cat > /dev/null
[[ $1 == -c ]] && (cd "$(dirname "$0")/.." && pwd)
exit 0
"""
STUB_CXX = """#!/usr/bin/env bash
out=${@: -1}
printf '#!/bin/sh\\necho "a b"\\n' > "$out" && chmod +x "$out"
"""


def _executable(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.fixture
def project(tmp_path):
    """A copy of the project's scripts with a stub .venv, a stub compiler and a fake
    fastBPE sdist: (project dir, env, sdist)."""
    proj = tmp_path / "proj"
    for name in ("install-fastbpe.sh", "venv.sh"):
        (proj / "scripts").mkdir(parents=True, exist_ok=True)
        shutil.copy(os.path.join(REPO, "scripts", name), proj / "scripts" / name)
    fixture = proj / "tests" / "fixtures" / "text" / "train.en"
    fixture.parent.mkdir(parents=True)
    fixture.write_text("a b\n")
    _executable(proj / ".venv" / "bin" / "python", STUB_PYTHON)
    cxx = _executable(tmp_path / "cxx", STUB_CXX)
    sdist = tmp_path / "fastBPE-0.1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as tar:
        for name in ("fastBPE.pyx", "main.cc"):
            info = tarfile.TarInfo(f"fastBPE-0.1.0/fastBPE/{name}")
            tar.addfile(info, io.BytesIO(b""))
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env.update(CXX=str(cxx), PATH="/usr/bin:/bin")
    return proj, env, sdist


def _install(proj, env, sdist, *flags, cwd):
    script = proj / "scripts" / "install-fastbpe.sh"
    return subprocess.run(
        ["bash", str(script), "--sdist", str(sdist), "--no-cli", *flags],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _calls(venv):
    return (venv / "bin" / "calls.log").read_text().splitlines()


def test_no_venv_active_installs_into_the_projects_venv(project, tmp_path):
    proj, env, sdist = project
    proc = _install(proj, env, sdist, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    venv = proj / ".venv"
    assert proc.stdout.splitlines()[-1].startswith(f"fastBPE 0.1.0 installed into {venv} ")
    assert len(_calls(venv)) >= 5  # Cython check, cython x2, pip install, check, prefix


def test_an_active_venv_wins(project, tmp_path):
    proj, env, sdist = project
    active = tmp_path / "active"
    _executable(active / "bin" / "python", STUB_PYTHON)
    env.update(VIRTUAL_ENV=str(active), PATH=f"{active}/bin:{env['PATH']}")
    proc = _install(proj, env, sdist, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _calls(active) and not (proj / ".venv" / "bin" / "calls.log").exists()


def test_relative_python_and_fixture(project):
    proj, env, sdist = project
    flags = ("--python", ".venv/bin/python", "--fixture", "tests/fixtures/text/train.en")
    proc = _install(proj, env, sdist, *flags, cwd=proj)
    assert proc.returncode == 0, proc.stderr
    assert "No such file" not in proc.stderr
    # every call ran the project's interpreter, also the check run from another directory
    assert all(f" {proj}/.venv/bin/python " in call for call in _calls(proj / ".venv"))
    assert any(call.startswith("/ ") for call in _calls(proj / ".venv"))
