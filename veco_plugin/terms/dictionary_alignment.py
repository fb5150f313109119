"""ALIGN-MLM's dictionary alignment (``align``; Tang et al., §3):

    L_ALIGN = -(1/|B|) Σ_i cos(E[B_i1], E[B_i2])

over a bilingual word list B on the input embeddings E (a word of several pieces: the
mean of its pieces' rows, or skipped with ``--align-skip-multi-piece``); with
``--align-dictionary-pieces`` B holds ``dict.txt`` token pairs (``veco-derive-language``'s
``bilingual.txt``), each side one row of E, and both ``--align-dictionary`` and
``--align-heldout`` are read so (:func:`resolve_dictionary`, the one loader of
``--align-dictionary`` for this term and DICT-MLM's ``mono_dict``). It reads no
batch: every step embeds the whole resolved list through the model's ``embed`` request.
The term's loss is ``L_ALIGN * sample_size``, so that after fairseq's division by the
number of masked tokens ``weight * L_ALIGN`` is added to the MLM loss (eq. L_ALIGN-MLM,
alpha = the weight). Logged: ``align_cos`` (mean cosine over the list) and, at each
validation with ``--align-heldout``, ``align_score``: the paper's alignment score on the
held-out words (``veco_plugin.evaluation.word_translation``)."""

import logging
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import torch
import torch.nn.functional as F
from fairseq import metrics
from fairseq.dataclass import FairseqDataclass
from omegaconf import II

from ..corpora.subwords import load_sentencepiece
from ..data.bilingual_dictionary import (
    ResolvedDictionary,
    load_resolved,
    load_token_pairs,
    load_word_pairs,
    mean_embeddings,
    save_resolved,
)
from ..errors import VecoUserError
from ..evaluation.word_translation import build_task, word_translation_hits
from ..models.requests import Embed
from .base import VecoTerm, inner_model
from .scores import logged_total

logger = logging.getLogger(__name__)

RESOLVED_NAME = "align_dictionary.tsv"  # written next to the checkpoints


@dataclass
class AlignSettings(FairseqDataclass):
    align_dictionary: Optional[str] = field(
        default=None,
        metadata={
            "help": "bilingual word list for L_ALIGN: MUSE-style `src tgt` lines (e.g. "
            "veco-gettext-dictionary's train.txt), `token token` lines with "
            "--align-dictionary-pieces, or a resolved align_dictionary.tsv of an earlier run "
            "(used as is)"
        },
    )
    align_dictionary_pieces: bool = field(
        default=False,
        metadata={"help": "--align-dictionary holds dict.txt token pairs, not words"},
    )
    align_heldout: Optional[str] = field(
        default=None,
        metadata={"help": "held-out word list: the alignment score logged at each validation"},
    )
    align_spm_model: Optional[str] = field(
        default=None,
        metadata={"help": "sentencepiece model of the vocabulary (default: DATA/spm.model)"},
    )
    align_skip_multi_piece: bool = field(
        default=False,
        metadata={"help": "drop words of several pieces (default: the mean of their pieces)"},
    )
    save_dir: str = II("checkpoint.save_dir")
    no_save: bool = II("checkpoint.no_save")
    distributed_rank: int = II("distributed_training.distributed_rank")


def _is_resolved(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(3) == b"# {"


def resolve_dictionary(
    cfg: AlignSettings, task: Any, path: str, flag: str = "--align-dictionary"
) -> ResolvedDictionary:
    """The file ``path`` given as ``flag`` over ``task.source_dictionary``: a resolved
    ``align_dictionary.tsv`` as is; with ``--align-dictionary-pieces`` token pairs
    (``load_token_pairs``); else a word list through ``--align-spm-model`` (default
    ``DATA/spm.model``)."""
    if os.path.isdir(path):
        raise VecoUserError(
            f"{flag} {path} is a directory: give the word list in it (veco-gettext-dictionary "
            "--output DIR writes DIR/train.txt and DIR/heldout.txt)"
        )
    if not os.path.isfile(path):
        raise VecoUserError(f"{flag} {path}: no such file")
    if _is_resolved(path):
        return load_resolved(path, task.source_dictionary)
    if cfg.align_dictionary_pieces:
        return load_token_pairs(path, task.source_dictionary)
    spm_model = cfg.align_spm_model
    if spm_model is None:
        data = getattr(getattr(task, "cfg", None), "data", "")
        spm_model = os.path.join(data, "spm.model")
        if not os.path.isfile(spm_model):
            raise VecoUserError(
                f"{flag} {path} is a word list: give --align-spm-model (the sentencepiece "
                f"model of DATA/dict.txt; {spm_model} does not exist), or "
                "--align-dictionary-pieces if it holds dict.txt token pairs"
            )
    spm = load_sentencepiece(spm_model, flag="--align-spm-model")
    return load_word_pairs(path, spm, task.source_dictionary, cfg.align_skip_multi_piece)


class DictionaryAlignmentTerm(VecoTerm):
    keys = ("align",)

    def __init__(self, cfg, task, weights):
        super().__init__(cfg, task, weights)
        if not cfg.align_dictionary:
            raise VecoUserError(
                "the align term needs --align-dictionary FILE (`src tgt` word pairs per line; "
                "veco-gettext-dictionary --tgt-lang de --output DIR writes DIR/train.txt)"
            )
        self.dictionary = resolve_dictionary(cfg, task, cfg.align_dictionary)
        if len(self.dictionary) == 0:
            raise VecoUserError(
                f"--align-dictionary {cfg.align_dictionary}: no usable entry "
                f"({self.dictionary.summary()})"
            )
        logger.info("--align-dictionary %s: %s", cfg.align_dictionary, self.dictionary.summary())
        self.score_task = None
        if cfg.align_heldout:
            if os.path.isfile(cfg.align_heldout) and os.path.samefile(
                cfg.align_heldout, cfg.align_dictionary
            ):
                raise VecoUserError(
                    f"--align-heldout {cfg.align_heldout} is the --align-dictionary file: the "
                    "score must be on words L_ALIGN does not train (veco-gettext-dictionary "
                    "--output DIR writes DIR/train.txt and DIR/heldout.txt)"
                )
            heldout = resolve_dictionary(cfg, task, cfg.align_heldout, "--align-heldout")
            logger.info("--align-heldout %s: %s", cfg.align_heldout, heldout.summary())
            self.score_task = build_task(heldout, [self.dictionary])
        if cfg.distributed_rank == 0 and not cfg.no_save:
            os.makedirs(cfg.save_dir, exist_ok=True)
            save_resolved(self.dictionary, os.path.join(cfg.save_dir, RESOLVED_NAME))
        self.device: Optional[torch.device] = None

    def prepare(self, model):
        self.embeddings = inner_model(model).sentence_encoder.embed_tokens
        self.validating = not inner_model(model).training
        device = self.embeddings.weight.device
        if device != self.device:
            self.dictionary = self.dictionary.to(device)
            if self.score_task is not None:
                self.score_task = self.score_task.to(device)
            self.device = device

    def shared_requests(self, requests):
        d = self.dictionary
        requests["align"] = Embed(torch.cat([d.src_ids.reshape(-1), d.tgt_ids.reshape(-1)]))

    def add_shared(self, outputs, sample_size, terms):
        d = self.dictionary
        rows = outputs["align"].embeddings  # (N*P_src + N*P_tgt, C)
        n_src = d.src_ids.numel()
        src = mean_embeddings(rows[:n_src], _positions(d.src_ids), d.src_mask)  # (N, C)
        tgt = mean_embeddings(rows[n_src:], _positions(d.tgt_ids), d.tgt_mask)  # (N, C)
        cos = F.cosine_similarity(src.float(), tgt.float(), dim=-1)  # (N,)
        counts = {"align_cos_sum": cos.sum().detach(), "align_entries": cos.numel()}
        if self.score_task is not None and self.validating:
            counts["align_hits"], counts["align_queries"] = word_translation_hits(
                self.embeddings.weight, self.score_task
            )
        terms["align"] = {"key": "align", "loss": -cos.mean() * sample_size, "counts": counts}

    @staticmethod
    def reduce_metrics(logging_outputs: List[Dict]) -> None:
        def total(key):
            return logged_total(logging_outputs, key)

        entries, queries = total("align_entries"), total("align_queries")
        if entries:
            metrics.log_scalar("align_cos", total("align_cos_sum") / entries, entries, round=4)
        if queries:
            metrics.log_scalar(
                "align_score", 100.0 * total("align_hits") / queries, queries, round=2
            )


def _positions(ids: torch.Tensor) -> torch.Tensor:
    """(N, P) indices 0..N*P-1: row-major positions of ``ids`` in the embedded rows."""
    return torch.arange(ids.numel(), device=ids.device).view_as(ids)
