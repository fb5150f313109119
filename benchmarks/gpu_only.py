"""pytest plugin (``-p gpu_only``, ``benchmarks/`` on ``PYTHONPATH``): keep only the
tests that need a GPU, those marked ``gpu`` or skipped without one (a ``skipif`` whose
reason names CUDA or a GPU); ``benchmarks/gpu.py`` runs them on the device.

A kept test asking for a fixture that its file cannot see (defined in another folder's
``conftest.py``) is a usage error here, on the CPU: without a GPU it is skipped before
its fixtures are looked up, so the device would be the first to find out."""

import re

import pytest

NEEDS_GPU = re.compile(r"\b(cuda|gpu)\b", re.IGNORECASE)


def needs_gpu(item) -> bool:
    if item.get_closest_marker("gpu") is not None:
        return True
    return any(NEEDS_GPU.search(m.kwargs.get("reason", "")) for m in item.iter_markers("skipif"))


def unknown_fixtures(item):
    known = item._fixtureinfo.name2fixturedefs
    return [name for name in item.fixturenames if name not in known and name != "request"]


def pytest_collection_modifyitems(config, items):
    kept = [item for item in items if needs_gpu(item)]
    config.hook.pytest_deselected(items=[item for item in items if not needs_gpu(item)])
    items[:] = kept
    unknown = {item.nodeid: unknown_fixtures(item) for item in kept if unknown_fixtures(item)}
    if unknown:
        raise pytest.UsageError(
            "GPU tests asking for fixtures their folder's conftest.py does not define: "
            + "; ".join(f"{test} ({', '.join(names)})" for test, names in unknown.items())
        )
