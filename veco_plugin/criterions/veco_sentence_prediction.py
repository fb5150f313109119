"""``veco_sentence_prediction``: cross-entropy of the classification head, plug-out or
plug-in (paper §3.1).

One model call per step (``model(**net_input, classification_head_name=...)``, the
entry point fairseq's DDP wrappers see). Plug-out: logits (B, K) as fairseq's
``sentence_prediction``. Plug-in: logits (2B, K), rows ``:B`` for the examples x, rows
``B:`` for their translations y, both with x's label; ``accuracy`` is over all rows,
``x_accuracy`` over the examples alone (what evaluation on x's language measures).

``x_accuracy`` is exact: 100 x correct / examples of the counts summed over the split (and
workers), not rounded as fairseq's logged scalars are (to 0.1: two checkpoints 0.04 apart
would tie for ``--best-checkpoint-metric``). XTREME keeps the checkpoint of the best exact
dev accuracy (``run_classify.py:258``).
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
from fairseq.logging.meters import MetersDict

from ..errors import VecoUserError
from ..terms.scores import logged_total

CORRECT, EXAMPLES = "ncorrect_x", "nexamples"  # x_accuracy's counts, summed over the split


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
            CORRECT: correct[: labels.numel()].sum(),
            EXAMPLES: labels.numel(),
        }
        return loss, sample_size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        SentencePredictionCriterion.reduce_metrics(logging_outputs)
        n = logged_total(logging_outputs, EXAMPLES)
        if n:
            metrics.log_scalar_sum(f"_{CORRECT}", logged_total(logging_outputs, CORRECT))
            metrics.log_scalar_sum(f"_{EXAMPLES}", n)
            metrics.log_derived("x_accuracy", exact_accuracy)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True


def exact_accuracy(meters: MetersDict) -> float:
    """100 x the examples x right / the examples, summed so far (validation: the split)."""
    return 100.0 * meters[f"_{CORRECT}"].sum / meters[f"_{EXAMPLES}"].sum
