"""pytest plugin (``-p gpu_only``, ``benchmarks/`` on ``PYTHONPATH``): keep only the
tests that need a GPU, those marked ``gpu`` or skipped without one (a ``skipif`` whose
reason names CUDA or a GPU); ``benchmarks/gpu.py`` runs them on the device."""

import re

NEEDS_GPU = re.compile(r"\b(cuda|gpu)\b", re.IGNORECASE)


def needs_gpu(item) -> bool:
    if item.get_closest_marker("gpu") is not None:
        return True
    return any(NEEDS_GPU.search(m.kwargs.get("reason", "")) for m in item.iter_markers("skipif"))


def pytest_collection_modifyitems(config, items):
    kept = [item for item in items if needs_gpu(item)]
    config.hook.pytest_deselected(items=[item for item in items if not needs_gpu(item)])
    items[:] = kept
