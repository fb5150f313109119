"""XTREME's fine-tuning recipes as ``veco-xtreme`` runs them, one row per task.

The settings are those of google-research/xtreme's ``scripts/train_<task>.sh`` for
XLM-R (``run_tag.py``, ``run_squad.py``, ``run_classify.py``): AdamW (eps 1e-8, betas
(0.9, 0.999)), an effective batch of 32 sentences (or windows), the learning rate decayed
linearly to 0 over the run, gradients clipped at 1.0. fairseq's ``adam`` with
``--weight-decay`` is AdamW; ``polynomial_decay`` (power 1) is the linear decay.

Each recipe also says which command prepares its DATA, which fairseq task and criterion
fine-tune, which validation metric keeps the best checkpoint on English dev, and which
command scores the test files.
"""

from dataclasses import dataclass
from typing import Dict, Tuple


@dataclass(frozen=True)
class Recipe:
    task: str
    """``--task`` of veco-xtreme: udpos, xquad, xnli, pawsx."""
    prepare: str
    """the module of the console script that binarizes (``python -m``)."""
    evaluate: str
    """the module of the console script that scores the test files."""
    fairseq_task: str
    """``fairseq-train --task`` (and ``--criterion``: the same name)."""
    lr: float
    epochs: int
    max_length: int
    """positions of a window (<s> and </s> included); 0: the model's positions
    (``veco_sentence_prediction`` truncates a pair there; XTREME: 128, which few XNLI and
    PAWS-X pairs reach)."""
    max_question: int = 0
    """question pieces kept in a window (QA)."""
    doc_stride: int = 0
    """context pieces between window starts (QA: run_squad.py's ``doc_stride``)."""
    warmup_updates: int = 0
    weight_decay: float = 0.0
    batch_size: int = 32
    best_metric: str = "accuracy"
    """fairseq's ``--best-checkpoint-metric`` on English dev ("loss": lowest is best)."""
    test_format: str = "tagged"
    """what ``--test LANG=FILE`` is: ``tagged`` (CoNLL-U / word<TAB>tag, read raw by the
    scorer), ``squad`` (SQuAD v1.1 JSON, read raw), ``tsv`` (XTREME's TSV, binarized as a
    split ``test_<lang>``)."""
    layout: str = ""
    """``veco-prepare-sentence-prediction --layout`` (tsv tasks)."""
    classes: int = 0
    """label count of a sentence task (``--num-classes``)."""
    metrics: Tuple[str, ...] = ("accuracy",)
    """what the table shows, first the headline."""

    @property
    def maximize(self) -> bool:
        return self.best_metric != "loss"


RECIPES: Dict[str, Recipe] = {
    r.task: r
    for r in (
        Recipe(
            "udpos",
            prepare="veco_plugin.cli.prepare_tagging",
            evaluate="veco_plugin.cli.tag_eval",
            fairseq_task="veco_tagging",
            lr=2e-5,
            epochs=10,
            max_length=128,
            metrics=("accuracy", "f1"),
        ),
        # run_squad.py: 4 x 8 gradient accumulation, 500 warm-up steps, weight decay 1e-4;
        # the best checkpoint by English dev loss (decoding answers at every validation is
        # what veco-qa-eval does once, on the kept checkpoint)
        Recipe(
            "xquad",
            prepare="veco_plugin.cli.prepare_span_qa",
            evaluate="veco_plugin.cli.qa_eval",
            fairseq_task="veco_span_qa",
            lr=3e-5,
            epochs=3,
            max_length=384,
            max_question=64,
            doc_stride=128,
            warmup_updates=500,
            weight_decay=1e-4,
            best_metric="loss",
            test_format="squad",
            metrics=("f1", "em"),
        ),
        Recipe(
            "xnli",
            prepare="veco_plugin.cli.prepare_sentence_prediction",
            evaluate="veco_plugin.cli.sentence_prediction_eval",
            fairseq_task="veco_sentence_prediction",
            lr=2e-5,
            epochs=5,
            max_length=0,
            test_format="tsv",
            layout="xnli",
            classes=3,
        ),
        Recipe(
            "pawsx",
            prepare="veco_plugin.cli.prepare_sentence_prediction",
            evaluate="veco_plugin.cli.sentence_prediction_eval",
            fairseq_task="veco_sentence_prediction",
            lr=2e-5,
            epochs=5,
            max_length=0,
            test_format="tsv",
            layout="pawsx",
            classes=2,
        ),
    )
}
