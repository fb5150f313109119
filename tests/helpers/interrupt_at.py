"""``python -m tests.helpers.interrupt_at POINT -- ARGS...``: ``fairseq-train ARGS`` with
a Ctrl-C (SIGINT to its whole process group, as a terminal sends it) at a named point:

- ``step``: before the 3rd training step;
- ``worker``: to the DataLoader workers first (before the 1st training step), to the group
  before the 3rd: the main process has asked them for batches in between;
- ``valid``: before the first validation step;
- ``write``: inside the ``torch.save`` of the first checkpoint;
- ``rename``: between that write and the rename of its ``.tmp``;
- ``copy``: inside the first copy to ``checkpoint_last.pt``;
- ``twice``: inside the first ``torch.save``, then again (Ctrl-C twice).

Run in a session of its own (the test's process group is not hit). The points are
functions of fairseq and of the plugin wrapped here; what runs is fairseq-train's own
``cli_main``. Test-only (tests/integration/test_interrupts.py)."""

import multiprocessing
import os
import signal
import sys
import time

from fairseq import checkpoint_utils
from fairseq.trainer import Trainer

from veco_plugin.checkpoints import atomic


def ctrl_c() -> None:
    os.killpg(0, signal.SIGINT)


def on_call(owner, name: str, nth: int, before, static: bool = False) -> None:
    """``before()`` at the ``nth`` call of ``owner.name``, then the call itself
    (``static``: a class's staticmethod)."""
    original, calls = getattr(owner, name), [0]

    def wrapper(*args, **kwargs):
        calls[0] += 1
        if calls[0] == nth:
            before()
        return original(*args, **kwargs)

    setattr(owner, name, staticmethod(wrapper) if static else wrapper)


def to_workers() -> None:
    for child in multiprocessing.active_children():
        os.kill(child.pid, signal.SIGINT)
    time.sleep(0.5)  # they have got it


def twice() -> None:
    ctrl_c()
    time.sleep(0.2)
    ctrl_c()


POINTS = {
    "step": lambda: on_call(Trainer, "train_step", 3, ctrl_c),
    "worker": lambda: (
        on_call(Trainer, "train_step", 1, to_workers),
        on_call(Trainer, "train_step", 3, ctrl_c),
    ),
    "valid": lambda: on_call(Trainer, "valid_step", 1, ctrl_c),
    "write": lambda: on_call(checkpoint_utils, "_torch_persistent_save", 1, ctrl_c),
    "rename": lambda: on_call(atomic.AtomicCopyPathManager, "rename", 1, ctrl_c, static=True),
    "copy": lambda: on_call(atomic, "atomic_copy", 1, ctrl_c),
    "twice": lambda: on_call(checkpoint_utils, "_torch_persistent_save", 1, twice),
}


def main() -> None:
    point, dash, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    assert dash == "--", sys.argv
    POINTS[point]()
    from fairseq_cli import train

    sys.argv = [os.path.join(os.path.dirname(sys.executable), "fairseq-train"), *args]
    train.cli_main()


if __name__ == "__main__":
    main()
