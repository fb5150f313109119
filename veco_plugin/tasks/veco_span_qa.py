"""``veco_span_qa``: extractive QA (SQuAD v1.1, XQuAD, MLQA) fine-tuned on one language,
tested zero-shot on others, as XTREME measures it (plug-out: the head reads H^L).

DATA is ``veco-prepare-span-qa``'s layout (:mod:`..corpora.span_qa_data`)::

    DATA/input0/{split}.{bin,idx} dict.txt   windows <s> question </s></s> context </s>
    DATA/targets/{split}.{bin,idx}           (start, end) per window, (0, 0) = no answer
    DATA/qa_windows.json, DATA/spm.model     for veco-qa-eval

The model is a :class:`..models.veco_token_tagger.VecoTokenTagger` with one 2-class token head
(``--classification-head-name``, default ``span_qa``): start and end logits at every position,
one projection of H^L (XTREME's ``qa_outputs``; ``--pooler-dropout 0``: none). As RoBERTa
fine-tuning, the LM head (and, plug-out, the cross-attention) is unused: with ``pytorch_ddp``
add ``--find-unused-parameters``.

::

    fairseq-train DATA --user-dir veco_plugin --task veco_span_qa --criterion veco_span_qa \\
        --arch veco_base --restore-file ca_mlm/checkpoint_best.pt --reset-optimizer \\
        --reset-dataloader --reset-meters --batch-size 32 --lr 3e-5 --max-epoch 2 \\
        --optimizer adam --lr-scheduler fixed
"""

import logging
from dataclasses import dataclass, field

from fairseq.tasks import register_task

from ..errors import VecoUserError
from .token_heads import VecoTokenHeadConfig, VecoTokenHeadTask

logger = logging.getLogger(__name__)

SPAN_CLASSES = 2  # start, end


@dataclass
class VecoSpanQaConfig(VecoTokenHeadConfig):
    classification_head_name: str = field(
        default="span_qa", metadata={"help": "name of the start/end token head"}
    )


@register_task("veco_span_qa", dataclass=VecoSpanQaConfig)
class VecoSpanQaTask(VecoTokenHeadTask):
    cfg: VecoSpanQaConfig
    name, prepare = "veco_span_qa", "veco-prepare-span-qa"

    @classmethod
    def setup_task(cls, cfg: VecoSpanQaConfig, **kwargs):
        dictionary = cls.input_dictionary(cfg)
        logger.info("[input] %d types", len(dictionary))
        return cls(cfg, dictionary)

    @property
    def target_dictionary(self):
        return None  # targets are positions

    def head_classes(self) -> int:
        return SPAN_CLASSES

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        """Windows (B, T) and their (start, end) targets (B, 2), shuffled, in length order."""
        tokens = self.indexed("input0", split, self.dictionary, combine)
        targets = self.indexed("targets", split, None, combine)
        if len(tokens) != len(targets) or (targets.sizes != 2).any():
            raise VecoUserError(
                f"--data {self.cfg.data}: input0/{split} and targets/{split} differ in windows, "
                "or a target is not (start, end): write DATA again with veco-prepare-span-qa"
            )
        return self.windows(split, tokens, targets, 0)
