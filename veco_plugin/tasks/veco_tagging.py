"""``veco_tagging``: token tagging (POS, NER) fine-tuned on one language, tested zero-shot on
others, as XTREME measures it (plug-out: the head reads H^L, XLM-R's setting).

DATA is ``veco-prepare-tagging``'s layout::

    DATA/input0/{split}.{bin,idx} dict.txt   windows ``<s> pieces </s>`` (the model's dictionary)
    DATA/label/{split}.{bin,idx} dict.txt    per piece: the word's tag at its first piece,
                                             <pad> elsewhere (the loss ignores it)
    DATA/spm.model                           the sentencepiece model the windows came from

The head (:class:`..models.veco_token_tagger.VecoTokenClassificationHead`) has one class
per tag of the train split. As RoBERTa fine-tuning, the LM head (and, plug-out, the
cross-attention) is unused: with ``pytorch_ddp`` add ``--find-unused-parameters``.

::

    fairseq-train DATA --user-dir veco_plugin --task veco_tagging --criterion veco_tagging \\
        --arch veco_base --restore-file ca_mlm/checkpoint_best.pt --reset-optimizer \\
        --reset-dataloader --reset-meters --batch-size 32 --lr 2e-5 --max-epoch 10 \\
        --optimizer adam --lr-scheduler fixed --best-checkpoint-metric accuracy \\
        --maximize-best-checkpoint-metric
"""

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
from fairseq.tasks import FairseqTask, register_task
from omegaconf import II, MISSING

from ..criterions.masked_terms import DdpSettings, refuse_idle_parameters
from ..data.dictionary import load_dictionary
from ..errors import VecoUserError
from ..models.veco import build_veco
from ..models.veco_token_tagger import VecoTokenTagger

logger = logging.getLogger(__name__)


@dataclass
class VecoTaggingConfig(DdpSettings):
    data: str = field(default=MISSING, metadata={"help": "veco-prepare-tagging's DATA"})
    max_positions: int = field(default=512, metadata={"help": "the model's positions"})
    classification_head_name: str = field(
        default="tagging", metadata={"help": "name of the token classification head"}
    )
    seed: int = II("common.seed")


@register_task("veco_tagging", dataclass=VecoTaggingConfig)
class VecoTaggingTask(FairseqTask):
    cfg: VecoTaggingConfig

    def __init__(self, cfg: VecoTaggingConfig, dictionary, label_dictionary):
        super().__init__(cfg)
        self.dictionary, self.label_dictionary = dictionary, label_dictionary

    @classmethod
    def setup_task(cls, cfg: VecoTaggingConfig, **kwargs):
        paths = [os.path.join(cfg.data, key, "dict.txt") for key in ("input0", "label")]
        missing = [p for p in paths if not os.path.isfile(p)]
        if missing:
            raise VecoUserError(
                f"--task veco_tagging: no {missing[0]}: give the DATA directory "
                "veco-prepare-tagging wrote"
            )
        dictionary, labels = (load_dictionary(p) for p in paths)
        dictionary.add_symbol("<mask>")  # the pre-trained model's last row (XLM-R's layout)
        logger.info("[input] %d types, [label] %d tags", len(dictionary), tag_count(labels))
        return cls(cfg, dictionary, labels)

    @property
    def source_dictionary(self):
        return self.dictionary

    @property
    def target_dictionary(self):
        return self.label_dictionary

    def max_positions(self):
        return self.cfg.max_positions

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        """Windows and their per-piece tags, shuffled by ``--seed``, in length order."""
        tokens = self._indexed("input0", split, self.dictionary, combine)
        labels = self._indexed("label", split, self.label_dictionary, combine)
        if len(tokens) != len(labels) or (tokens.sizes != labels.sizes).any():
            raise VecoUserError(
                f"--data {self.cfg.data}: input0/{split} and label/{split} differ in windows "
                "or lengths: write DATA again with veco-prepare-tagging"
            )
        dataset = NestedDictionaryDataset(
            {
                "id": IdDataset(),
                "net_input": {
                    "src_tokens": RightPadDataset(tokens, pad_idx=self.dictionary.pad()),
                    "src_lengths": NumelDataset(tokens, reduce=False),
                },
                "target": RightPadDataset(labels, pad_idx=self.label_dictionary.pad()),
                "nsentences": NumSamplesDataset(),
                "ntokens": NumelDataset(tokens, reduce=True),
            },
            sizes=[tokens.sizes],
        )
        with data_utils.numpy_seed(self.cfg.seed):
            shuffle = np.random.permutation(len(tokens))
        self.datasets[split] = SortDataset(dataset, sort_order=[shuffle, tokens.sizes])
        return self.datasets[split]

    def _indexed(self, key: str, split: str, dictionary, combine: bool):
        path = os.path.join(self.cfg.data, key, split)
        dataset = data_utils.load_indexed_dataset(path, dictionary, combine=combine)
        if dataset is None:
            raise VecoUserError(
                f"--data {self.cfg.data}: no {key}/{split}.bin: prepare that split "
                f"(veco-prepare-tagging --split {split}=FILE)"
            )
        return dataset

    def build_criterion(self, cfg, from_checkpoint=False):
        """Refused up front where torch's DDP would crash at the second update."""
        refuse_idle_parameters(
            self.cfg, "--task veco_tagging", "the LM head and the cross-attention"
        )
        return super().build_criterion(cfg, from_checkpoint)

    def build_model(self, cfg, from_checkpoint=False):
        """A ``veco`` arch as :class:`VecoTokenTagger` with one token head."""
        base = build_veco(cfg, self, from_checkpoint, "--task veco_tagging")
        model = VecoTokenTagger(base.args, base.encoder)
        model.register_classification_head(
            self.cfg.classification_head_name, num_classes=tag_count(self.label_dictionary)
        )
        return model


def tag_count(labels) -> int:
    """Tags of a label dictionary (its symbols after fairseq's specials)."""
    return len(labels) - labels.nspecial
