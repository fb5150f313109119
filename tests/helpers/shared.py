"""Session fixtures built once per test run, not once per pytest-xdist worker.

``make test`` runs two workers; each has its own session, so a plain session fixture
(the gettext corpus, the pre-training DATA, the cold-start checkpoint) would be built
twice, at the same time, on the same two cores. :func:`built_once` puts the result under
the directory the workers share (the parent of each worker's base temp dir) and builds
it under a file lock: the first worker to ask builds it, the others wait and reuse it.
"""

import os
import shutil
from pathlib import Path
from typing import Callable

import pytest
from filelock import FileLock

BUILT = ".built"  # written last: a directory without it is a failed or killed build


def shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This run's directory for results shared by its workers (the base temp dir
    without xdist)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]
) -> Path:
    """``SHARED/name``, made by ``build(path)`` into an empty directory unless a worker of
    this run has already made it; a build that raised is retried by the next caller."""
    path = shared_root(tmp_path_factory) / "shared" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{path}.lock"):
        if not (path / BUILT).exists():
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir()
            build(path)
            (path / BUILT).touch()
    return path
