"""The three steps in order: plan and vocabulary once (under a lock on DATA), then the
shards that are missing, in this process or over a pool of worker processes."""

import fcntl
import logging
import multiprocessing
import os
import shutil
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Callable, Iterator, List, Optional, Sequence

from ..errors import VecoUserError
from . import plan as planning
from . import vocabulary
from .plan import PLAN, Plan, Settings
from .shards import build_shard, shard_path

logger = logging.getLogger(__name__)


@contextmanager
def _locked(data: str) -> Iterator[None]:
    """Hold ``DATA/.prepare.lock``: the tasks of a job array plan one at a time."""
    with open(os.path.join(data, ".prepare.lock"), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@contextmanager
def _mapper(workers: int) -> Iterator[Callable[[Callable, Sequence], Iterator]]:
    """``map`` over ``workers`` processes (forked: no re-import), or in this process."""
    if workers <= 1:
        yield map
        return
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        yield pool.map


# what DATA may hold before its plan exists: the lock, and what a killed planning left
_PLANNING = {".prepare.lock", ".spm-sample", "spm.model", "dict.txt", "dict.txt.part"}


def _check_fresh(data: str) -> None:
    """Refuse to plan into a DATA that holds anything else (another tool's DATA, shards
    with another dictionary)."""
    others = sorted(
        n for n in os.listdir(data) if n not in _PLANNING and not n.endswith(".partial")
    )
    if others:
        raise VecoUserError(
            f"--out {data} holds {', '.join(others[:3])}{' ...' if len(others) > 3 else ''} "
            f"but no {PLAN}: it was not made by this command; pass a new or empty --out"
        )


def _prepared(settings: Settings, data: str, workers: int, threads: int) -> Plan:
    """The plan of DATA: read (and checked against ``settings``), or made now with the
    vocabulary."""
    path = os.path.join(data, PLAN)
    with _locked(data):
        if os.path.exists(path):
            found = Plan.load(path)
            planning.check_same(found, settings, path)
            return found
        _check_fresh(data)
        with _mapper(workers) as mapper:
            plan = planning.count(settings, mapper)
            vocabulary.train(plan, data, mapper, threads)
        plan.save(path)  # last: its presence means the shared files are complete
        return plan


def _check_out(data: str) -> bool:
    """Make ``data`` if missing; whether this call made it."""
    if os.path.exists(data) and not os.path.isdir(data):
        raise VecoUserError(f"--out {data} is a file; pass a directory (made if missing)")
    if os.path.isdir(data):
        return False
    os.makedirs(data, exist_ok=True)
    return True


def _build(job) -> bool:
    plan, data, shard, threads, position = job
    return build_shard(plan, data, shard, threads, position)


def prepare(
    settings: Settings,
    data: str,
    shard: Optional[int] = None,
    workers: int = 1,
    threads: int = 1,
) -> Plan:
    """Make ``data/shard0 ... shard<N-1>`` (only ``shard`` if given) from
    ``settings.text``; existing shards are kept as they are."""
    n = settings.shards
    for flag, value in (("--shards", n), ("--workers", workers), ("--threads", threads)):
        if value < 1:
            raise VecoUserError(f"{flag} {value}: pass 1 or more")
    if shard is not None and not 0 <= shard < n:
        raise VecoUserError(
            f"--shard {shard}: --shards {n} makes shard0 ... shard{n - 1}; pass 0 to {n - 1}"
        )
    made = _check_out(data)
    try:
        plan = _prepared(settings, data, workers, threads)
    except BaseException:  # bad text or flags: leave no --out behind that this run made
        if made:
            shutil.rmtree(data, ignore_errors=True)
        raise
    wanted = [shard] if shard is not None else list(range(n))
    todo: List[int] = []
    for k in wanted:
        if os.path.isdir(shard_path(data, k)):
            logger.info(f"shard{k}: complete, skipped")
        else:
            todo.append(k)
    # fewer shards to build than workers: the spare workers encode as threads
    threads = max(threads, workers // max(len(todo), 1))
    jobs = [(plan, data, k, threads, i % workers) for i, k in enumerate(todo)]
    try:
        with _mapper(min(workers, len(todo))) as mapper:
            for k, built in zip(todo, mapper(_build, jobs)):
                logger.info(f"shard{k}: {'built' if built else 'complete, skipped'}")
    except BrokenProcessPool:
        raise VecoUserError(
            "a shard worker died (killed, or out of memory): run the same command "
            "again; complete shards are kept, the others are rebuilt"
        ) from None
    return plan
