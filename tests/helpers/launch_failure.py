"""Jobs that stop with a user error, as tests/unit/test_errors.py runs them.

``python -m tests.helpers.launch_failure``, with torchrun's variables: one rank; rank 0
refuses a flag while rank 1 waits for it in a collective.
``python -m tests.helpers.launch_failure spawn``: ``torch.multiprocessing.spawn`` of two
processes (fairseq's launch on GPU nodes) whose rank 1 refuses a flag.
"""

import os
import sys

import torch
import torch.distributed as dist

import veco_plugin  # noqa: F401  (the excepthook)
from veco_plugin.errors import VecoUserError


def refuse_on_rank_one(index: int) -> None:
    if index == 1:
        raise VecoUserError("--flag x: only rank 1 refuses it")


if __name__ == "__main__":
    if sys.argv[1:] == ["spawn"]:
        torch.multiprocessing.spawn(refuse_on_rank_one, nprocs=2)
    else:
        dist.init_process_group("gloo")
        dist.barrier()
        if int(os.environ["RANK"]) == 0:
            raise VecoUserError("--flag x: only rank 0 refuses it")
        dist.all_reduce(torch.ones(1))  # waits for rank 0, which has ended
