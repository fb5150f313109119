"""``veco_span_qa``: extractive QA (SQuAD v1.1, XQuAD, MLQA) fine-tuned on one language,
tested zero-shot on others, as XTREME measures it (plug-out: the head reads H^L).

DATA is ``veco-prepare-span-qa``'s layout (:mod:`..corpora.span_qa_data`)::

    DATA/input0/{split}.{bin,idx} dict.txt   windows <s> question </s></s> context </s>
    DATA/targets/{split}.{bin,idx}           (start, end) per window, (0, 0) = no answer
    DATA/qa_windows.json, DATA/spm.model     for veco-qa-eval

The model is a :class:`..models.veco_token_tagger.VecoTokenTagger` with one 2-class token
head (``--classification-head-name``, default ``span_qa``): start and end logits at every
position. As RoBERTa fine-tuning, the LM head (and, plug-out, the cross-attention) is
unused: with ``pytorch_ddp`` add ``--find-unused-parameters``.

::

    fairseq-train DATA --user-dir veco_plugin --task veco_span_qa --criterion veco_span_qa \\
        --arch veco_base --restore-file ca_mlm/checkpoint_best.pt --reset-optimizer \\
        --reset-dataloader --reset-meters --batch-size 32 --lr 3e-5 --max-epoch 2 \\
        --optimizer adam --lr-scheduler fixed
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

SPAN_CLASSES = 2  # start, end


@dataclass
class VecoSpanQaConfig(DdpSettings):
    data: str = field(default=MISSING, metadata={"help": "veco-prepare-span-qa's DATA"})
    max_positions: int = field(default=512, metadata={"help": "the model's positions"})
    classification_head_name: str = field(
        default="span_qa", metadata={"help": "name of the start/end token head"}
    )
    seed: int = II("common.seed")


@register_task("veco_span_qa", dataclass=VecoSpanQaConfig)
class VecoSpanQaTask(FairseqTask):
    cfg: VecoSpanQaConfig

    def __init__(self, cfg: VecoSpanQaConfig, dictionary):
        super().__init__(cfg)
        self.dictionary = dictionary

    @classmethod
    def setup_task(cls, cfg: VecoSpanQaConfig, **kwargs):
        path = os.path.join(cfg.data, "input0", "dict.txt")
        if not os.path.isfile(path):
            raise VecoUserError(
                f"--task veco_span_qa: no {path}: give the DATA directory veco-prepare-span-qa "
                "wrote"
            )
        dictionary = load_dictionary(path)
        dictionary.add_symbol("<mask>")  # the pre-trained model's last row (XLM-R's layout)
        logger.info("[input] %d types", len(dictionary))
        return cls(cfg, dictionary)

    @property
    def source_dictionary(self):
        return self.dictionary

    @property
    def target_dictionary(self):
        return None  # targets are positions

    def max_positions(self):
        return self.cfg.max_positions

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        """Windows (B, T) and their (start, end) targets (B, 2), shuffled by ``--seed``, in
        length order."""
        tokens = self._indexed("input0", split, self.dictionary, combine)
        targets = self._indexed("targets", split, None, combine)
        if len(tokens) != len(targets) or (targets.sizes != 2).any():
            raise VecoUserError(
                f"--data {self.cfg.data}: input0/{split} and targets/{split} differ in windows, "
                "or a target is not (start, end): write DATA again with veco-prepare-span-qa"
            )
        dataset = NestedDictionaryDataset(
            {
                "id": IdDataset(),
                "net_input": {
                    "src_tokens": RightPadDataset(tokens, pad_idx=self.dictionary.pad()),
                    "src_lengths": NumelDataset(tokens, reduce=False),
                },
                "target": RightPadDataset(targets, pad_idx=0),  # all of length 2: (B, 2)
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
                f"(veco-prepare-span-qa --split {split}=FILE.json)"
            )
        return dataset

    def build_criterion(self, cfg, from_checkpoint=False):
        """Refused up front where torch's DDP would crash at the second update."""
        refuse_idle_parameters(
            self.cfg, "--task veco_span_qa", "the LM head and the cross-attention"
        )
        return super().build_criterion(cfg, from_checkpoint)

    def build_model(self, cfg, from_checkpoint=False):
        """A ``veco`` arch as :class:`VecoTokenTagger` with one 2-class (start, end) head."""
        base = build_veco(cfg, self, from_checkpoint, "--task veco_span_qa")
        model = VecoTokenTagger(base.args, base.encoder)
        model.register_classification_head(
            self.cfg.classification_head_name, num_classes=SPAN_CLASSES
        )
        return model
