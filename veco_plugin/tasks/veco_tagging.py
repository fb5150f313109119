"""``veco_tagging``: token tagging (POS, NER) fine-tuned on one language, tested zero-shot on
others, as XTREME measures it (plug-out: the head reads H^L, XLM-R's setting).

DATA is ``veco-prepare-tagging``'s layout::

    DATA/input0/{split}.{bin,idx} dict.txt   windows ``<s> pieces </s>`` (the model's dictionary)
    DATA/label/{split}.{bin,idx} dict.txt    per piece: the word's tag at its first piece,
                                             <pad> elsewhere (the loss ignores it)
    DATA/spm.model                           the sentencepiece model the windows came from

The head (:class:`..models.veco_token_tagger.VecoTokenHead`: dropout at ``--pooler-dropout``,
one projection, XTREME's tagger) has one class per tag of the train split. As RoBERTa
fine-tuning, the LM head (and, plug-out, the cross-attention) is unused: with ``pytorch_ddp``
add ``--find-unused-parameters``.

::

    fairseq-train DATA --user-dir veco_plugin --task veco_tagging --criterion veco_tagging \\
        --arch veco_base --restore-file ca_mlm/checkpoint_best.pt --reset-optimizer \\
        --reset-dataloader --reset-meters --batch-size 32 --lr 2e-5 --max-epoch 10 \\
        --optimizer adam --lr-scheduler fixed --best-checkpoint-metric f1 \\
        --maximize-best-checkpoint-metric

Validation logs word ``accuracy`` and ``f1``, seqeval's F1 over the whole split (the
criterion's): XTREME keeps the tagger of the best English dev F1.
"""

import logging
import os
from dataclasses import dataclass, field

from fairseq.tasks import register_task

from ..data.dictionary import load_dictionary
from ..errors import VecoUserError
from .token_heads import VecoTokenHeadConfig, VecoTokenHeadTask

logger = logging.getLogger(__name__)


@dataclass
class VecoTaggingConfig(VecoTokenHeadConfig):
    classification_head_name: str = field(
        default="tagging", metadata={"help": "name of the token classification head"}
    )


@register_task("veco_tagging", dataclass=VecoTaggingConfig)
class VecoTaggingTask(VecoTokenHeadTask):
    cfg: VecoTaggingConfig
    name, prepare = "veco_tagging", "veco-prepare-tagging"

    def __init__(self, cfg: VecoTaggingConfig, dictionary, label_dictionary):
        super().__init__(cfg, dictionary)
        self.label_dictionary = label_dictionary

    @classmethod
    def setup_task(cls, cfg: VecoTaggingConfig, **kwargs):
        dictionary = cls.input_dictionary(cfg)
        path = os.path.join(cfg.data, "label", "dict.txt")
        if not os.path.isfile(path):
            raise VecoUserError(cls.missing(path))
        labels = load_dictionary(path)
        logger.info("[input] %d types, [label] %d tags", len(dictionary), tag_count(labels))
        return cls(cfg, dictionary, labels)

    @property
    def target_dictionary(self):
        return self.label_dictionary

    def head_classes(self) -> int:
        return tag_count(self.label_dictionary)

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        """Windows and their per-piece tags (<pad>: none), shuffled, in length order."""
        tokens = self.indexed("input0", split, self.dictionary, combine)
        labels = self.indexed("label", split, self.label_dictionary, combine)
        if len(tokens) != len(labels) or (tokens.sizes != labels.sizes).any():
            raise VecoUserError(
                f"--data {self.cfg.data}: input0/{split} and label/{split} differ in windows "
                "or lengths: write DATA again with veco-prepare-tagging"
            )
        return self.windows(split, tokens, labels, self.label_dictionary.pad())


def tag_count(labels) -> int:
    """Tags of a label dictionary (its symbols after fairseq's specials)."""
    return len(labels) - labels.nspecial
