"""``veco_span_qa``: cross-entropy of the start and of the end position of the answer
over the positions of each window, as XTREME's ``run_squad.py`` (Hugging Face's
``XLMRobertaForQuestionAnswering``) computes it::

    loss_w = (CE(start_logits_w, start_w) + CE(end_logits_w, end_w)) / 2

summed over the windows of the batch, sample size = windows (fairseq logs loss /
windows in bits). Padding positions are set to a large negative before the softmax.

One model call per step, no host sync (``masked_fill``, tensor counts).
"""

import math
from dataclasses import dataclass

import torch.nn.functional as F
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass
from fairseq.logging import metrics
from omegaconf import II

from ..terms.scores import logged_total

PADDED = -1e9  # a padding position's logit: exp() of it is 0 next to any real logit


@dataclass
class VecoSpanQaCriterionConfig(FairseqDataclass):
    classification_head_name: str = II("task.classification_head_name")


@register_criterion("veco_span_qa", dataclass=VecoSpanQaCriterionConfig)
class VecoSpanQaCriterion(FairseqCriterion):
    def __init__(self, cfg: VecoSpanQaCriterionConfig, task):
        super().__init__(task)
        self.head = cfg.classification_head_name
        self.pad = task.source_dictionary.pad()

    def forward(self, model, sample, reduce=True):
        src_tokens = sample["net_input"]["src_tokens"]  # (B, T)
        logits, _ = model(
            **sample["net_input"], features_only=True, classification_head_name=self.head
        )  # (B, T, 2)
        logits = logits.float().masked_fill(src_tokens.eq(self.pad).unsqueeze(-1), PADDED)
        start_logits, end_logits = logits.unbind(-1)  # (B, T) each
        target = sample["target"]  # (B, 2): start, end positions
        start_nll = F.cross_entropy(start_logits, target[:, 0], reduction="sum")
        end_nll = F.cross_entropy(end_logits, target[:, 1], reduction="sum")
        loss = (start_nll + end_nll) / 2
        windows = target.size(0)
        logging_output = {
            "loss": loss.data,
            "start_loss": start_nll.data,
            "end_loss": end_nll.data,
            "ntokens": sample["ntokens"],
            "nsentences": sample["nsentences"],
            "sample_size": windows,
            "nstart": start_logits.argmax(-1).eq(target[:, 0]).sum(),
            "nend": end_logits.argmax(-1).eq(target[:, 1]).sum(),
        }
        return loss, windows, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        windows = max(logged_total(logging_outputs, "sample_size"), 1)
        for key in ("loss", "start_loss", "end_loss"):
            total = logged_total(logging_outputs, key)
            metrics.log_scalar(key, total / windows / math.log(2), windows, round=3)
        for key, name in (("nstart", "start_accuracy"), ("nend", "end_accuracy")):
            total = logged_total(logging_outputs, key)
            metrics.log_scalar(name, 100.0 * total / windows, windows, round=2)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
