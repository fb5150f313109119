"""``veco_tagging``: summed cross-entropy of the token head at every tagged piece (a
word's first piece), per-word accuracy and, in validation, seqeval's corpus-level F1.

One model call per step (``model(**net_input, classification_head_name=...)``, the entry
point fairseq's DDP wrappers see); no host sync in training: the tagged pieces are a mask,
the sample size (the words of the batch) a tensor, as fairseq's ``masked_lm`` returns it.

Validation (the model in eval mode, as fairseq's ``ctc`` criterion scores WER) also counts
seqeval's chunks (:mod:`..evaluation.tagging_scores`) of each window's words, read at their
first pieces as XTREME's ``run_tag.py`` reads them: right, predicted and gold chunks, summed
over batches and workers, and logs ``f1`` = 100 x their micro F1 over the whole split
(``--best-checkpoint-metric f1 --maximize-best-checkpoint-metric``: XTREME keeps the tagger
of the best English dev F1). Each window is scored as a sentence of its own, as XTREME's
dev files cut a long sentence into sentences of at most a window; for every tag with a type
that is the F1 of the split's windows joined (seqeval's ``f1_score``).
"""

import math
from dataclasses import dataclass
from typing import Dict, List

import torch.nn.functional as F
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass
from fairseq.logging import metrics
from fairseq.logging.meters import MetersDict
from omegaconf import II
from torch import Tensor

from ..evaluation.tagging_scores import chunk_counts, f1_of_counts
from ..terms.scores import logged_total

CHUNKS = ("chunks_correct", "chunks_predicted", "chunks_gold")  # validation's summed counts


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
        self.tags: List[str] = labels.symbols[labels.nspecial :]  # class id -> tag

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
        predicted = logits.argmax(-1)  # (B, T)
        correct = (predicted.eq(classes) & tagged).sum()
        logging_output = {
            "loss": loss.data,
            "ntokens": sample["ntokens"],
            "nsentences": sample["nsentences"],
            "sample_size": words,
            "ncorrect": correct,
        }
        if not model.training:
            logging_output.update(self.chunk_counts(classes, predicted, tagged))
        return loss, words, logging_output

    def chunk_counts(self, gold: Tensor, predicted: Tensor, tagged: Tensor) -> Dict[str, int]:
        """seqeval's chunk counts of the windows' words, each window apart: ``gold`` and
        ``predicted`` class ids (B, T), read where ``tagged`` (B, T) (a word's first piece).
        On the host: validation only."""
        counts = [0, 0, 0]
        for gold_row, predicted_row, tagged_row in zip(
            gold.tolist(), predicted.tolist(), tagged.tolist()
        ):
            window = [
                (self.tags[g], self.tags[p])
                for g, p, t in zip(gold_row, predicted_row, tagged_row)
                if t
            ]
            found = chunk_counts([[g for g, _ in window]], [[p for _, p in window]])
            counts = [a + b for a, b in zip(counts, found)]
        return dict(zip(CHUNKS, counts))

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        loss = logged_total(logging_outputs, "loss")
        words = logged_total(logging_outputs, "sample_size")
        correct = logged_total(logging_outputs, "ncorrect")
        metrics.log_scalar("loss", loss / max(words, 1) / math.log(2), words, round=3)
        metrics.log_scalar("accuracy", 100.0 * correct / max(words, 1), words, round=2)
        if any(CHUNKS[0] in log for log in logging_outputs):
            for key in CHUNKS:
                metrics.log_scalar_sum(f"_{key}", logged_total(logging_outputs, key))
            metrics.log_derived("f1", split_f1)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True


def split_f1(meters: MetersDict) -> float:
    """100 x seqeval's micro F1 of the chunk counts summed over the split so far."""
    return 100.0 * f1_of_counts(*(meters[f"_{key}"].sum for key in CHUNKS))
