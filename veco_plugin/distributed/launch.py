"""torchrun and Slurm on machines without GPUs.

fairseq reads the launcher's environment in ``distributed.utils.infer_init_method``,
but its path assumes GPUs: with the CPU default ``--distributed-world-size 1`` it returns
before reading the environment (``torchrun --nproc-per-node 2`` starts two independent
one-process runs), and with ``--distributed-world-size 2`` it divides the rank by the
CUDA device count (``ZeroDivisionError``). Importing the plugin wraps that function:
where no GPU is visible and the environment names a world of several processes, the
world comes from the launcher, one process per rank, as on GPU nodes:

* torchrun (``WORLD_SIZE``, ``RANK``, ``LOCAL_RANK``, ``MASTER_ADDR``/``PORT``):
  ``env://`` initialisation;
* ``srun`` (``SLURM_NTASKS``, ``SLURM_PROCID``, ``SLURM_LOCALID``, the step's node
  list): ``tcp://`` to the first node of the list, on ``--distributed-port`` (default:
  a port derived from ``SLURM_JOB_ID``, the same in every task of the job).

With GPUs fairseq's own path runs unchanged. A ``--distributed-world-size`` that
contradicts the launcher, or several processes asked for without a launcher on a
machine without GPUs, is one line.
"""

import functools
import logging
import os
import re
from dataclasses import dataclass
from typing import Mapping, Optional

import torch

from ..errors import VecoUserError, end_after_outer_hook
from ..patching import wrap_once

logger = logging.getLogger(__name__)

TORCHRUN = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")


@dataclass(frozen=True)
class World:
    """One process's place in a launched job."""

    launcher: str  # "torchrun" / "srun": named in messages
    size: int
    rank: int
    local_rank: int
    init_method: str


def first_host(nodelist: str) -> str:
    """The first host of a Slurm node list: ``node[07-09,12],gpu1`` -> ``node07``."""
    match = re.match(r"([^,\[]+)(?:\[([^\]]+)\])?", nodelist.strip())
    if match is None:
        raise VecoUserError(f"SLURM_JOB_NODELIST {nodelist!r}: not a Slurm node list")
    prefix, ranges = match.groups()
    if not ranges:
        return prefix
    return prefix + re.split(r"[-,]", ranges, maxsplit=1)[0]


def slurm_port(environ: Mapping[str, str]) -> int:
    """A port every task of the job derives alike from its job id (10000..59999)."""
    return 10000 + int(environ.get("SLURM_JOB_ID", "0")) % 50000


def launched_world(environ: Mapping[str, str], port: int) -> Optional[World]:
    """The world torchrun or srun launched this process into; None for one process."""
    if all(key in environ for key in TORCHRUN):
        size = int(environ["WORLD_SIZE"])
        if size > 1:
            return World(
                "torchrun",
                size,
                int(environ["RANK"]),
                int(environ.get("LOCAL_RANK", "0")),
                "env://",
            )
        return None
    nodelist = environ.get("SLURM_STEP_NODELIST", environ.get("SLURM_JOB_NODELIST"))
    if nodelist and "SLURM_PROCID" in environ and int(environ.get("SLURM_NTASKS", "1")) > 1:
        port = port if port > 0 else slurm_port(environ)
        return World(
            "srun",
            int(environ["SLURM_NTASKS"]),
            int(environ["SLURM_PROCID"]),
            int(environ.get("SLURM_LOCALID", "0")),
            f"tcp://{first_host(nodelist)}:{port}",
        )
    return None


def join_world(cfg, world: World) -> None:
    """Point fairseq's ``distributed_training`` config ``cfg`` at ``world``."""
    if cfg.distributed_world_size not in (1, world.size):
        raise VecoUserError(
            f"--distributed-world-size {cfg.distributed_world_size} contradicts {world.launcher}'s "
            f"{world.size} processes: leave the flag out (the launcher names the world size)"
        )
    if cfg.distributed_backend == "nccl":
        logger.info("no GPU: --distributed-backend gloo instead of nccl")
        cfg.distributed_backend = "gloo"
    cfg.distributed_init_method = world.init_method
    cfg.distributed_world_size = world.size
    cfg.distributed_rank = world.rank
    cfg.device_id = world.local_rank
    cfg.distributed_no_spawn = True  # the launcher made one process per rank
    logger.info("%s: rank %d of %d (%s)", world.launcher, world.rank, world.size, world.init_method)


def _cpu_launch(infer_init_method):
    @functools.wraps(infer_init_method)
    def wrapper(cfg, force_distributed=False):
        if cfg.distributed_init_method is None and not cfg.tpu and not torch.cuda.is_available():
            world = launched_world(os.environ, cfg.distributed_port)
            if world is not None:
                return join_world(cfg, world)
            if cfg.distributed_world_size > 1:
                n = cfg.distributed_world_size
                raise VecoUserError(
                    f"--distributed-world-size {n} without GPUs needs one process per rank: "
                    f"launch with torchrun --nproc-per-node {n} $(which fairseq-train) ... "
                    "(or srun), or give each process --distributed-rank, "
                    "--distributed-init-method tcp://HOST:PORT and --distributed-no-spawn"
                )
        return infer_init_method(cfg, force_distributed)

    return wrapper


def _ends_after_torchs_hook(init_process_group):
    @functools.wraps(init_process_group)
    def wrapper(*args, **kwargs):
        result = init_process_group(*args, **kwargs)
        end_after_outer_hook()  # torch's excepthook now wraps the plugin's
        return result

    return wrapper


def install() -> None:
    """Wrap fairseq's ``infer_init_method`` (``call_main`` looks it up in its module) and
    torch's ``init_process_group`` (fairseq calls it as ``torch.distributed``'s)."""
    from fairseq.distributed import utils

    wrap_once(utils, "infer_init_method", _cpu_launch, "cpu_launch")
    if torch.distributed.is_available():
        wrap_once(torch.distributed, "init_process_group", _ends_after_torchs_hook, "ends")
