"""fairseq-train ends with no thread inside torch.

fairseq's ``BufferedIterator`` collates the next batches in a daemon thread
(``BackgroundConsumer``). When training stops (``--max-update``, ``--max-epoch``) that thread
may be collating a batch no one will read: the interpreter's finalization then ends it inside
torch, and the process aborts (``terminate called without an active exception``, SIGABRT,
exit status 134) after a run that saved every checkpoint. Here each consumer pulls its next
batch only while no one has asked it to stop; once ``main`` returns from fairseq's
``call_main`` (and ``distributed_main``: the spawned ranks), every live consumer is asked to
stop and waited for until it has ended or waits on its full queue (a wait outside torch,
which finalization ends cleanly). A Ctrl-C or an error ends the process without
finalization already (:mod:`veco_plugin.errors`).
"""

import functools
import threading
import weakref
from typing import Any, Callable, Iterable, Iterator

from .patching import wrap_once

_CONSUMERS: "weakref.WeakSet[Any]" = weakref.WeakSet()


def _until_stopped(source: Iterable, stop: threading.Event) -> Iterator:
    """``source``'s items, none pulled (collated) once ``stop`` is set."""
    for item in source:
        yield item
        if stop.is_set():
            return


def _stoppable(init: Callable) -> Callable:
    @functools.wraps(init)
    def wrapper(self, queue, source, *args, **kwargs):
        self.veco_stop = threading.Event()
        init(self, queue, _until_stopped(source, self.veco_stop), *args, **kwargs)
        _CONSUMERS.add(self)

    return wrapper


def _closing(run: Callable) -> Callable:
    @functools.wraps(run)
    def wrapper(self):
        try:
            run(self)
        finally:  # the batches' iterator (and its DataLoader workers) ends with the thread,
            self._source.close()  # as fairseq's own loop ends it, not with the thread object

    return wrapper


def stop_consumers() -> None:
    """Ask every live batch consumer to stop after its current batch; return once each
    has ended or waits to put a batch in its full queue."""
    consumers = [c for c in list(_CONSUMERS) if c.is_alive()]
    for consumer in consumers:
        consumer.veco_stop.set()
    for consumer in consumers:
        while consumer.is_alive() and not consumer._queue.full():
            consumer.join(0.01)


def _stopping_after(call: Callable) -> Callable:
    @functools.wraps(call)
    def wrapper(*args, **kwargs):
        result = call(*args, **kwargs)
        stop_consumers()
        return result

    return wrapper


def install() -> None:
    """Make fairseq's batch consumers stoppable, and stop them when training's ``main``
    returns; idempotent."""
    from fairseq.data import iterators
    from fairseq.distributed import utils

    wrap_once(iterators.BackgroundConsumer, "__init__", _stoppable, "collating_threads")
    wrap_once(iterators.BackgroundConsumer, "run", _closing, "collating_threads")
    wrap_once(utils, "call_main", _stopping_after, "collating_threads")
    wrap_once(utils, "distributed_main", _stopping_after, "collating_threads")
