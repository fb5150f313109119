"""``fairseq-train`` that also saves each rank's parameters when it ends, to
``SAVE_DIR/params.rank<R>.pt``: run under torchrun to compare the ranks of one job.

Usage: torchrun --nproc-per-node 2 tests/helpers/torchrun_params.py FAIRSEQ-TRAIN-ARGS...
"""

import os

import torch
from fairseq_cli import train as fairseq_train

_train_epoch = fairseq_train.train


def _train_and_save(cfg, trainer, task, epoch_itr):
    result = _train_epoch(cfg, trainer, task, epoch_itr)
    path = os.path.join(cfg.checkpoint.save_dir, f"params.rank{trainer.data_parallel_rank}.pt")
    torch.save({k: v.detach().clone() for k, v in trainer.model.state_dict().items()}, path)
    return result


fairseq_train.train = _train_and_save

if __name__ == "__main__":
    fairseq_train.cli_main()
