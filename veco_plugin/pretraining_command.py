"""The toy pre-training command, ``fairseq-train --task veco_pretraining``, built in one place.

The quickstart runs it once per row of :data:`veco_plugin.objectives.OBJECTIVES` (the
row's criterion, then its ``train_flags``); the tests and benchmarks run the same command
at their own sizes, stating only what they change. The defaults are the quickstart's
recipe: English-German, ``veco_tiny`` on the CPU, Adam with ε 1e-6 and gradient clipping
at 1.0, inverse-square-root learning rate, validation at the last update only.

Flags come in one fixed order (the quickstart's, which the README repeats); ``extra``
comes last, so that it overrides any flag before it (argparse keeps the last value).
"""

import os
from dataclasses import dataclass
from typing import List, Optional, Tuple

USER_DIR = os.path.dirname(os.path.abspath(__file__))
"""This package's directory: fairseq's ``--user-dir``."""

VALIDATIONS = ("at_end", "at_end_and_epochs", "never")
"""When a run validates: after its last update only; also at the end of every epoch
(fairseq's default); never (``--disable-validation``)."""


@dataclass(frozen=True)
class PretrainingCommand:
    data: str
    """DATA of ``veco_pretraining``: dict.txt, mono/<lang>/, bi/<src>-<tgt>/."""
    save_dir: str
    criterion: str
    """``--criterion`` (a row's ``criterion``; its ``train_flags`` go into ``extra``)."""
    updates: int
    """``--max-update``."""
    warmup: Optional[int]
    """``--warmup-updates`` of the inverse-square-root schedule; None: no schedule, the
    constant ``--lr`` (fairseq's ``fixed``)."""
    max_tokens: int
    """tokens per update, monolingual and bilingual sub-batches together."""
    max_positions: int
    """``--max-mono-positions``."""
    bi_positions: Optional[int] = None
    """``--max-bi-positions`` (each side of a pair); None: half of ``max_positions``."""
    lr: str = "2e-3"
    user_dir: str = USER_DIR
    langs: Tuple[str, str] = ("en", "de")
    """``--mono-langs src,tgt`` and ``--bi-pairs src-tgt``."""
    arch: str = "veco_tiny"
    size: Tuple[str, ...] = ()
    """encoder-size flags after ``--arch`` (``--encoder-layers 2 ...``)."""
    device: Tuple[str, ...] = ("--cpu",)
    """``--cpu``, ``--fp16``, or nothing (the GPU in fp32)."""
    adam_betas: Optional[str] = "(0.9,0.98)"
    """None: fairseq's default ((0.9, 0.999))."""
    adam_eps: Optional[str] = "1e-6"
    """None: fairseq's default (1e-8)."""
    clip_norm: Optional[str] = "1.0"
    """None: fairseq's default (no clipping)."""
    save_every: Optional[int] = None
    """``--save-interval-updates``; None: ``updates`` (a checkpoint at the end)."""
    keep_last: Optional[int] = None
    """``--keep-interval-updates``; None: fairseq's default (keep all)."""
    validate: str = "at_end"
    """one of :data:`VALIDATIONS`."""
    log_interval: int = 50
    seed: int = 1
    extra: Tuple[str, ...] = ()
    """flags after all others: a cold start (``--restore-file``), the row's ``train_flags``,
    a test's own settings."""

    def args(self) -> List[str]:
        """fairseq-train's arguments (without the program)."""
        if self.validate not in VALIDATIONS:
            raise ValueError(f"validate={self.validate!r}: choose from {', '.join(VALIDATIONS)}")
        src, tgt = self.langs
        bi_positions = self.max_positions // 2 if self.bi_positions is None else self.bi_positions
        optimizer = ["--optimizer", "adam"]
        if self.adam_betas is not None:
            optimizer += ["--adam-betas", self.adam_betas]
        if self.adam_eps is not None:
            optimizer += ["--adam-eps", self.adam_eps]
        if self.clip_norm is not None:
            optimizer += ["--clip-norm", self.clip_norm]
        schedule = ["--lr", self.lr]
        if self.warmup is not None:
            schedule += ["--lr-scheduler", "inverse_sqrt", "--warmup-updates", str(self.warmup)]
        every = self.updates if self.save_every is None else self.save_every
        saving = ["--save-interval-updates", str(every)]
        if self.keep_last is not None:
            saving += ["--keep-interval-updates", str(self.keep_last)]
        validation = {
            "at_end": ["--validate-interval-updates", str(self.updates),
                       "--validate-interval", "1000000"],
            "at_end_and_epochs": ["--validate-interval-updates", str(self.updates)],
            "never": ["--disable-validation"],
        }[self.validate]  # fmt: skip
        return [
            str(self.data), "--user-dir", self.user_dir, "--task", "veco_pretraining",
            "--mono-langs", f"{src},{tgt}", "--bi-pairs", f"{src}-{tgt}",
            "--arch", self.arch, *self.size, "--criterion", self.criterion, *self.device,
            *optimizer, *schedule, "--max-tokens", str(self.max_tokens),
            "--max-mono-positions", str(self.max_positions),
            "--max-bi-positions", str(bi_positions), "--max-update", str(self.updates),
            "--save-dir", str(self.save_dir), "--no-epoch-checkpoints", *saving, *validation,
            "--log-format", "json", "--log-interval", str(self.log_interval),
            "--seed", str(self.seed), "--num-workers", "0", *map(str, self.extra),
        ]  # fmt: skip

    def command(self, program: str = "fairseq-train") -> List[str]:
        """``program`` (fairseq-train, or its path) and :meth:`args`."""
        return [program, *self.args()]
