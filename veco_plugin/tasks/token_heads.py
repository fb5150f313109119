"""What ``veco_tagging`` and ``veco_span_qa`` share: windows of pieces (``DATA/input0``) with
one target sequence each (``DATA/<key>``), a ``veco`` model with one token head
(:class:`..models.veco_token_tagger.VecoTokenTagger`), plug-out. As RoBERTa fine-tuning, the
LM head and the cross-attention are unused: with ``pytorch_ddp``, ``--find-unused-parameters``
is needed, and its absence is refused up front."""

import logging
import os
from dataclasses import dataclass, field

import numpy as np
from fairseq.data import (
    IdDataset,
    NestedDictionaryDataset,
    NumelDataset,
    NumSamplesDataset,
    RightPadDataset,
    SortDataset,
    data_utils,
)
from fairseq.tasks import FairseqTask
from omegaconf import II, MISSING

from ..criterions.masked_terms import DdpSettings, refuse_idle_parameters
from ..data.dictionary import load_dictionary
from ..errors import VecoUserError
from ..models.veco import build_veco
from ..models.veco_token_tagger import VecoTokenTagger
from ..optim.no_decay import mark_no_decay
from .fine_tuning import VecoFineTuningConfig, training_order

logger = logging.getLogger(__name__)


@dataclass
class VecoTokenHeadConfig(DdpSettings, VecoFineTuningConfig):
    data: str = field(default=MISSING, metadata={"help": "the DATA its prepare command wrote"})
    max_positions: int = field(default=512, metadata={"help": "the model's positions"})
    seed: int = II("common.seed")


class VecoTokenHeadTask(FairseqTask):
    """A task's ``name`` and its ``prepare`` command appear in its refusals."""

    name = ""
    prepare = ""

    def __init__(self, cfg, dictionary):
        super().__init__(cfg)
        self.dictionary = dictionary

    @classmethod
    def input_dictionary(cls, cfg):
        """``DATA/input0/dict.txt`` with XLM-R's ``<mask>`` (the pre-trained model's last row)."""
        path = os.path.join(cfg.data, "input0", "dict.txt")
        if not os.path.isfile(path):
            raise VecoUserError(cls.missing(path))
        dictionary = load_dictionary(path)
        dictionary.add_symbol("<mask>")
        return dictionary

    @classmethod
    def missing(cls, path: str) -> str:
        return f"--task {cls.name}: no {path}: give the DATA directory {cls.prepare} wrote"

    @property
    def source_dictionary(self):
        return self.dictionary

    def max_positions(self):
        return self.cfg.max_positions

    def head_classes(self) -> int:
        raise NotImplementedError

    def indexed(self, key: str, split: str, dictionary, combine: bool):
        path = os.path.join(self.cfg.data, key, split)
        dataset = data_utils.load_indexed_dataset(path, dictionary, combine=combine)
        if dataset is None:
            raise VecoUserError(
                f"--data {self.cfg.data}: no {key}/{split}.bin: prepare that split "
                f"({self.prepare} --split {split}=FILE)"
            )
        return dataset

    def windows(self, split: str, tokens, targets, target_pad: int):
        """``tokens`` (B, T) and ``targets`` (B, *) as fairseq's batches: shuffled by
        ``--seed``, in length order; the training split's drawn at random each epoch with
        ``--random-batches``."""
        dataset = NestedDictionaryDataset(
            {
                "id": IdDataset(),
                "net_input": {
                    "src_tokens": RightPadDataset(tokens, pad_idx=self.dictionary.pad()),
                    "src_lengths": NumelDataset(tokens, reduce=False),
                },
                "target": RightPadDataset(targets, pad_idx=target_pad),
                "nsentences": NumSamplesDataset(),
                "ntokens": NumelDataset(tokens, reduce=True),
            },
            sizes=[tokens.sizes],
        )
        with data_utils.numpy_seed(self.cfg.seed):
            shuffle = np.random.permutation(len(tokens))
        ordered = SortDataset(dataset, sort_order=[shuffle, tokens.sizes])
        self.datasets[split] = training_order(self.cfg, split, ordered)
        return self.datasets[split]

    def build_criterion(self, cfg, from_checkpoint=False):
        """Refused up front where torch's DDP would crash at the second update."""
        refuse_idle_parameters(
            self.cfg, f"--task {self.name}", "the LM head and the cross-attention"
        )
        return super().build_criterion(cfg, from_checkpoint)

    def build_model(self, cfg, from_checkpoint=False):
        """A ``veco`` arch as :class:`VecoTokenTagger` with one token head."""
        base = build_veco(cfg, self, from_checkpoint, f"--task {self.name}")
        model = VecoTokenTagger(base.args, base.encoder)
        model.register_classification_head(
            self.cfg.classification_head_name, num_classes=self.head_classes()
        )
        mark_no_decay(model)  # for veco_adamw --no-decay-bias-and-norm
        return model
