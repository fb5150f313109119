"""fairseq-train runs that other launches must repeat update for update (two ranks, a
resume, the two tiny shards of the ``shards`` fixture in tests/integration/conftest.py),
and their losses."""

from typing import Dict, Iterable, List

from tests.helpers.runner import json_logs, pretrain_args


def lockstep_args(data: str, save_dir: str, updates: int, *extra) -> List[str]:
    """``fairseq-train`` arguments of a ``ca_mlm`` run whose updates other launches must
    repeat: a loss logged at every update, dropout off (so that one process with
    ``--update-freq 2`` and two ranks of one batch each compute the same updates), no
    validation."""
    return pretrain_args(
        data,
        str(save_dir),
        "ca_mlm",
        updates,
        "--log-interval",
        "1",
        "--dropout",
        "0",
        "--attention-dropout",
        "0",
        "--disable-validation",
        *extra,
    )


def shard_train_args(data: str, save_dir: str, updates: int, *extra) -> List[str]:
    """``lockstep_args`` of a run over the ``shards`` fixture's shards (600 tokens a batch:
    a few updates an epoch)."""
    return lockstep_args(data, save_dir, updates, "--max-tokens", "600", *extra)


def losses(output: str) -> Dict[int, float]:
    """Training loss by update number, from fairseq-train's JSON log ``output``."""
    return {int(r["num_updates"]): float(r["loss"]) for r in json_logs(output)}


def assert_same_losses(got: Dict[int, float], want: Dict[int, float], updates: Iterable[int]):
    """``got`` equals ``want`` at every update of ``updates`` (1e-3 relative: fp32
    reduction order)."""
    for u in updates:
        assert abs(got[u] - want[u]) < 1e-3 * want[u], (u, got[u], want[u])
