"""XTREME's fine-tuning recipes as ``veco-xtreme`` runs them, one row per task.

The settings are those of google-research/xtreme's ``scripts/train_<task>.sh`` for
XLM-R (``run_tag.py``, ``run_squad.py``, ``run_classify.py``): AdamW (eps 1e-8, betas
(0.9, 0.999); no weight decay on biases and LayerNorm weights), 32 sentences (or windows)
an update over all processes, the learning rate decayed linearly to 0 over the run,
gradients clipped at 1.0. ``veco_adamw --no-decay-bias-and-norm`` is that AdamW;
``polynomial_decay`` (power 1) is the linear decay.

Which checkpoint is tested, as XTREME's scripts choose it: QA the model after the last
epoch (``train_qa.sh``: ``--save_steps -1``); tagging and the sentence tasks the best on
English dev (F1 / accuracy) checked every ``save_steps`` updates, the final model a
candidate too (``--save_only_best_checkpoint --eval_all_checkpoints``), on the exact score,
the first of tied ones kept (``run_tag.py:197,611``, ``run_classify.py:258,781``: ``>``).

Each epoch draws new random batches (``RandomSampler``: ``run_tag.py:85``,
``run_classify.py:102``, ``run_squad.py:111``). The lengths are the scripts': 128 positions
for tagging (``train_udpos.sh``/``train_panx.sh`` ``MAX_LENGTH=128``) and for XNLI/PAWS-X
pairs (``train_xnli.sh``/``train_pawsx.sh`` ``MAXL=128``), QA windows of 384 with a question
of at most 64 pieces and a stride of 128 (``train_qa.sh``, ``run_squad.py`` defaults).

Each recipe also says which command prepares its DATA, which fairseq task and criterion
fine-tune, and which command scores the test files.
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
    """positions of a window or pair (``<s>``, ``</s>`` included; the scripts' ``MAXL``,
    ``MAX_LENGTH``); 0: the task has none."""
    max_question: int = 0
    """question pieces kept in a window (QA)."""
    doc_stride: int = 0
    """context pieces between window starts (QA: run_squad.py's ``doc_stride``)."""
    warmup_updates: int = 0
    weight_decay: float = 0.0
    batch_size: int = 32
    """examples (sentences, windows) an update, over all processes."""
    keep: str = "best"
    """the checkpoint tested: ``best`` on English dev by ``best_metric``, or ``last``
    (the model after the last epoch; no validation)."""
    best_metric: str = "accuracy"
    """fairseq's ``--best-checkpoint-metric`` on English dev ("loss": lowest is best)."""
    validate_updates: int = 0
    """English dev is scored every this many updates and after the last (XTREME's
    ``--save_steps``); 0: after each epoch."""
    lr_large: float = 0.0
    """the learning rate of a large model (XLM-R large's recipe) where it differs."""
    test_format: str = "tagged"
    """what ``--test LANG=FILE`` is: ``tagged`` (CoNLL-U / word<TAB>tag, read raw by the
    scorer), ``squad`` (SQuAD v1.1 JSON, read raw), ``tsv`` (XTREME's TSV, binarized as a
    split ``test_<lang>``), ``retrieval`` (LASER's Tatoeba pair ``XXX_FILE,ENG_FILE``, or
    the language's files under ``--data``), ``bucc`` (XTREME's bucc2018 folder, ``--data``)."""
    layout: str = ""
    """``veco-prepare-sentence-prediction --layout`` (tsv tasks)."""
    classes: int = 0
    """label count of a sentence task (``--num-classes``)."""
    head_dropout: bool = True
    """the head drops out at the encoder's rate (``--pooler-dropout``): XTREME's tagger
    (dropout at ``hidden_dropout_prob``, then the projection) and sentence head; its QA head
    (``qa_outputs``, ``third_party/roberta.py:688``) has no dropout."""
    metrics: Tuple[str, ...] = ("accuracy",)
    """what the table shows, first the headline."""
    finetune: bool = True
    """False: the pre-trained model is scored as it is (XTREME's retrieval tasks)."""
    normalisation: str = ""
    """QA: ``veco-qa-eval --normalisation`` (``squad``: SQuAD v1.1's script in every
    language, as XTREME scores XQuAD and TyDiQA-GoldP; ``mlqa``: MLQA's)."""

    @property
    def maximize(self) -> bool:
        return self.best_metric != "loss"

    def lr_for(self, large: bool) -> float:
        return self.lr_large if large and self.lr_large else self.lr


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
            best_metric="f1",
            validate_updates=500,
            metrics=("f1", "accuracy"),
        ),
        # train_panx.sh: run_tag.py as udpos, checked every 1000 updates
        Recipe(
            "panx",
            prepare="veco_plugin.cli.prepare_tagging",
            evaluate="veco_plugin.cli.tag_eval",
            fairseq_task="veco_tagging",
            lr=2e-5,
            epochs=10,
            max_length=128,
            best_metric="f1",
            validate_updates=1000,
            metrics=("f1", "accuracy"),
        ),
        *(  # train_qa.sh: 4 x 8 gradient accumulation, 500 warm-up steps, weight decay
            # 1e-4, the model after the last epoch; trained on SQuAD v1.1 (English)
            Recipe(
                task,
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
                keep="last",
                best_metric="loss",
                head_dropout=False,
                test_format="squad",
                metrics=("f1", "em"),
                normalisation=normalisation,
            )
            for task, normalisation in (("xquad", "squad"), ("mlqa", "mlqa"), ("tydiqa", "squad"))
        ),
        # XTREME's original Tatoeba protocol (run_tatoeba.sh): the pre-trained model, no
        # fine-tuning; mean-pooled states of XTREME's layer, cosine nearest neighbour
        Recipe(
            "tatoeba",
            prepare="",
            evaluate="veco_plugin.cli.tatoeba_eval",
            fairseq_task="",
            lr=0.0,
            epochs=0,
            max_length=0,
            test_format="retrieval",
            finetune=False,
        ),
        # run_bucc2018.sh: <s> states of XTREME's layer, ratio-margin mining, the threshold
        # of the best F1 on BUCC's sample (dev) gold; scored on the test gold
        Recipe(
            "bucc2018",
            prepare="",
            evaluate="veco_plugin.cli.bucc_eval",
            fairseq_task="",
            lr=0.0,
            epochs=0,
            max_length=0,
            test_format="bucc",
            finetune=False,
            metrics=("f1", "dev_f1"),
        ),
        Recipe(
            "xnli",
            prepare="veco_plugin.cli.prepare_sentence_prediction",
            evaluate="veco_plugin.cli.sentence_prediction_eval",
            fairseq_task="veco_sentence_prediction",
            lr=2e-5,
            epochs=5,
            max_length=128,
            best_metric="x_accuracy",
            validate_updates=100,
            lr_large=3e-5,
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
            max_length=128,
            best_metric="x_accuracy",
            validate_updates=200,
            test_format="tsv",
            layout="pawsx",
            classes=2,
        ),
    )
}
