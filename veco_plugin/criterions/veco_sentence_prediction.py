"""``veco_sentence_prediction``: cross-entropy of the classification head, plug-out or
plug-in (paper §3.1).

One model call per step (``model(**net_input, classification_head_name=...)``, the
entry point fairseq's DDP wrappers see). Plug-out: logits (B, K) as fairseq's
``sentence_prediction``. Plug-in: logits (2B, K), rows ``:B`` for the examples x, rows
``B:`` for their translations y, both with x's label; ``accuracy`` is over all rows,
``x_accuracy`` over the examples alone (what evaluation on x's language measures).
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from fairseq.criterions import register_criterion
from fairseq.criterions.sentence_prediction import (
    SentencePredictionConfig,
    SentencePredictionCriterion,
)
from fairseq.logging import metrics

from ..errors import VecoUserError


@dataclass
class VecoSentencePredictionCriterionConfig(SentencePredictionConfig):
    pass


@register_criterion("veco_sentence_prediction", dataclass=VecoSentencePredictionCriterionConfig)
class VecoSentencePredictionCriterion(SentencePredictionCriterion):
    def __init__(self, cfg: VecoSentencePredictionCriterionConfig, task):
        super().__init__(cfg, task)
        if cfg.regression_target or self.keep_pred_and_targ:
            raise VecoUserError(
                "--criterion veco_sentence_prediction classifies: drop --regression-target "
                "and the --report-* flags (use fairseq's sentence_prediction for those)"
            )

    def forward(self, model, sample, reduce=True):
        logits, _ = model(
            **sample["net_input"],
            features_only=True,
            classification_head_name=self.classification_head_name,
        )
        labels = model.get_targets(sample, [logits]).view(-1)  # (B,)
        copies = logits.size(0) // labels.size(0)  # 2 with translations (plug-in)
        targets = labels.repeat(copies)  # x's rows, then y's
        lprobs = F.log_softmax(logits, dim=-1, dtype=torch.float32)
        loss = F.nll_loss(lprobs, targets, reduction="sum")
        correct = logits.argmax(dim=-1).eq(targets)
        sample_size = targets.numel()
        logging_output = {
            "loss": loss.data,
            "ntokens": sample["ntokens"],
            "nsentences": sample_size,
            "sample_size": sample_size,
            "ncorrect": correct.sum(),
            "ncorrect_x": correct[: labels.numel()].sum(),
            "nexamples": labels.numel(),
        }
        return loss, sample_size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        SentencePredictionCriterion.reduce_metrics(logging_outputs)
        n = sum(log.get("nexamples", 0) for log in logging_outputs)
        if n:
            ncorrect = sum(log.get("ncorrect_x", 0) for log in logging_outputs)
            metrics.log_scalar("x_accuracy", 100.0 * ncorrect / n, n, round=1)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
