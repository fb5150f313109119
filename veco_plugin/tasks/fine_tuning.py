"""What the fine-tuning tasks (``veco_tagging``, ``veco_span_qa``,
``veco_sentence_prediction``) can do as XTREME's scripts do, where fairseq's defaults differ:

* ``--random-batches``: each epoch, batches of training examples drawn at random
  (:mod:`..data.random_order`); fairseq's default builds its batches once (here: by length, or
  one shuffle) and only reorders them;
* ``--best-on-ties earlier``: tied best checkpoints keep the first
  (:mod:`..checkpoints.best_ties`).

``veco-xtreme`` passes both.
"""

from dataclasses import dataclass, field
from typing import Any

from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from omegaconf import II

from ..data.random_order import VecoRandomOrderDataset

TIES = ChoiceEnum(["later", "earlier"])


@dataclass
class VecoFineTuningConfig(FairseqDataclass):
    random_batches: bool = field(
        default=False,
        metadata={
            "help": "each epoch, batches of training examples drawn at random, seeded by "
            "--seed and the epoch (XTREME's RandomSampler); default: fairseq's batches, built "
            "once"
        },
    )
    best_on_ties: TIES = field(  # type: ignore[valid-type]
        default="later",
        metadata={
            "help": "of checkpoints with the same best dev score, keep the later (fairseq's "
            ">=) or the earlier (XTREME's strict >)"
        },
    )
    # read by FairseqTask.get_batch_iterator: batches built anew for each epoch (typed Any:
    # fairseq's argparse conversion makes bool("${...}") of a bool field without a flag)
    rebuild_batches: Any = II("task.random_batches")
    train_subset: str = II("dataset.train_subset")


def training_order(cfg: VecoFineTuningConfig, split: str, dataset):
    """``dataset``, in an order drawn for each epoch when it is the training split and
    ``--random-batches`` is on."""
    if cfg.random_batches and split == cfg.train_subset:
        return VecoRandomOrderDataset(dataset)
    return dataset
