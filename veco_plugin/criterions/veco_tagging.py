"""``veco_tagging``: summed cross-entropy of the token head at every tagged piece (a
word's first piece), per-word accuracy.

One model call per step (``model(**net_input, classification_head_name=...)``, the entry
point fairseq's DDP wrappers see); no host sync: the tagged pieces are a mask, the sample
size (the words of the batch) a tensor, as fairseq's ``masked_lm`` returns it.
"""

import math
from dataclasses import dataclass

import torch.nn.functional as F
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass
from fairseq.logging import metrics
from omegaconf import II

from ..terms.scores import logged_total


@dataclass
class VecoTaggingCriterionConfig(FairseqDataclass):
    classification_head_name: str = II("task.classification_head_name")


@register_criterion("veco_tagging", dataclass=VecoTaggingCriterionConfig)
class VecoTaggingCriterion(FairseqCriterion):
    def __init__(self, cfg: VecoTaggingCriterionConfig, task):
        super().__init__(task)
        self.head = cfg.classification_head_name
        labels = task.label_dictionary
        self.label_pad, self.offset = labels.pad(), labels.nspecial

    def forward(self, model, sample, reduce=True):
        logits, _ = model(
            **sample["net_input"], features_only=True, classification_head_name=self.head
        )  # (B, T, K)
        target = sample["target"]  # (B, T) label ids, <pad> where no tag
        tagged = target.ne(self.label_pad)
        classes = (target - self.offset).clamp(min=0)  # (B, T) class ids
        nll = F.cross_entropy(logits.flatten(0, 1).float(), classes.flatten(), reduction="none")
        loss = (nll * tagged.flatten()).sum()
        words = tagged.sum()
        correct = (logits.argmax(-1).eq(classes) & tagged).sum()
        logging_output = {
            "loss": loss.data,
            "ntokens": sample["ntokens"],
            "nsentences": sample["nsentences"],
            "sample_size": words,
            "ncorrect": correct,
        }
        return loss, words, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        loss = logged_total(logging_outputs, "loss")
        words = logged_total(logging_outputs, "sample_size")
        correct = logged_total(logging_outputs, "ncorrect")
        metrics.log_scalar("loss", loss / max(words, 1) / math.log(2), words, round=3)
        metrics.log_scalar("accuracy", 100.0 * correct / max(words, 1), words, round=2)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
