"""DICT-MLM's masked LM with dictionary targets (``mono_dict``; Chaudhary et al. 2020,
DICT-MLM-50, as ALIGN-MLM App. G.4 runs it).

Masked LM on monolingual batches where, at each masked position independently, the
target is the original token with probability ``1 - p`` and its dictionary translation
with probability ``p`` (``--dict-mlm-prob``, 0.5 in the paper) when the token has one;
a token without a translation keeps its target. The input is masked as for MLM: only
the targets change.

The translations come from ``--align-dictionary``, read by ALIGN-MLM's loader
(``dictionary_alignment.resolve_dictionary``: the two objectives of one experiment read
one dictionary the same way): a MUSE word list through sentencepiece, a resolved
``align_dictionary.tsv``, or, with ``--align-dictionary-pieces``, lines of two
``dict.txt`` symbols looked up as they are (``veco-derive-language``'s ``bilingual.txt``:
a piece and its copy; ``bilingual_dictionary.read_token_pairs``). Every entry whose two
sides are one piece each is a token translation (an entry with a multi-piece side has no
one token to predict and is skipped). Each pair translates both ways (``src -> tgt`` and
``tgt -> src``); a token listed with several translations keeps the first in file order,
the forward direction first.
:func:`translation_table` turns them into one lookup ``(V,)`` built once;
:func:`dictionary_targets` is the swap itself.

Randomness: in training, the global torch generator, which fairseq-train seeds before
every update with ``--seed`` + the update number (``Trainer._set_seed``), as dropout;
at validation a generator seeded with ``--seed`` at every batch, so the valid loss is a
function of the model alone. Logged: ``mono_dict_loss``/``_acc`` and ``dict_swap_rate``:
the share (%) of masked translatable targets that were swapped (about 100 p)."""

import logging
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import torch
from fairseq import metrics
from fairseq.dataclass import FairseqDataclass
from omegaconf import II
from torch import Tensor

from ..data.bilingual_dictionary import ResolvedDictionary, special_ids
from ..errors import VecoUserError
from ..models.requests import PlugOut
from .base import VecoTerm, check_range, inner_model
from .dictionary_alignment import resolve_dictionary
from .scores import logged_total, summed, targets_at, token_scores

logger = logging.getLogger(__name__)


@dataclass
class DictMlmSettings(FairseqDataclass):
    dict_mlm_prob: float = field(
        default=0.5,
        metadata={
            "help": "DICT-MLM: probability that a masked token with a translation in "
            "--align-dictionary is predicted as that translation (paper: 0.5)"
        },
    )
    seed: int = II("common.seed")


def translation_table(pairs: List[Tuple[int, int]], vocab_size: int) -> Tensor:
    """``(V,)`` int64: ``table[v]`` the translation of token ``v``, ``v`` itself when it
    has none. ``pairs``: ``(src, tgt)`` token ids in file order; each pair translates
    both ways, the first translation of a token wins, every forward one before the
    reverse ones."""
    table = list(range(vocab_size))
    given = [False] * vocab_size
    for a, b in [*pairs, *((t, s) for s, t in pairs)]:
        if not given[a]:
            table[a], given[a] = b, True
    return torch.tensor(table, dtype=torch.long)


def dictionary_targets(
    target: Tensor, table: Tensor, prob: float, generator: Optional[torch.Generator] = None
) -> Tuple[Tensor, Tensor]:
    """DICT-MLM's targets: each position whose token has a translation (``table[t] !=
    t``) takes it with probability ``prob``, independently; the others keep theirs.

    Args:
        target: (B, T) int64, the MLM targets (padding, which ``table`` maps to itself,
            where nothing is predicted)
        table: (V,) int64, :func:`translation_table`
        generator: the draws' generator (default: torch's global one)
    Returns:
        (B, T) the swapped targets and (B, T) bool, where a swap happened; no host sync.
    """
    translated = table[target]  # (B, T)
    draws = torch.rand(target.shape, generator=generator, device=target.device)
    swap = (draws < prob) & translated.ne(target)
    return torch.where(swap, translated, target), swap


class DictionaryMlmTerm(VecoTerm):
    """``mono_dict``: summed CE of the LM logits at the masked positions of each
    monolingual pair (both segments, a plug-out forward as XLM's MLM) against
    :func:`dictionary_targets`."""

    keys = ("mono_dict",)

    def __init__(self, cfg, task, weights):
        super().__init__(cfg, task, weights)
        if not cfg.align_dictionary:
            raise VecoUserError(
                "the mono_dict term (DICT-MLM) needs --align-dictionary FILE (`src tgt` "
                "word pairs per line, `token token` pairs of dict.txt with "
                "--align-dictionary-pieces, or a resolved align_dictionary.tsv)"
            )
        dictionary = task.source_dictionary
        path = cfg.align_dictionary
        resolved = resolve_dictionary(cfg, task, path)
        pairs = self._token_pairs(resolved, dictionary)
        skipped = len(resolved) - len(pairs)
        self.table = translation_table(pairs, len(dictionary))  # (V,)
        translated = int(self.table.ne(torch.arange(len(dictionary))).sum())
        logger.info(
            "--align-dictionary %s for DICT-MLM: %d token translations from %d token pairs "
            "(%d entries with a multi-piece side skipped), p = %g",
            path,
            translated,
            len(pairs),
            skipped,
            cfg.dict_mlm_prob,
        )
        self.device: Optional[torch.device] = None
        self.validation_generator: Optional[torch.Generator] = None

    def _token_pairs(self, resolved: ResolvedDictionary, dictionary) -> List[Tuple[int, int]]:
        """The single-piece entries as ``(src, tgt)`` ids; one naming a special symbol is
        refused (its table row would move padding or ``<mask>``)."""
        path = self.cfg.align_dictionary
        single = resolved.src_mask.sum(1).eq(1) & resolved.tgt_mask.sum(1).eq(1)  # (N,)
        src = resolved.src_ids[:, 0][single].tolist()
        tgt = resolved.tgt_ids[:, 0][single].tolist()
        words = [w for w, keep in zip(zip(resolved.src_words, resolved.tgt_words), single) if keep]
        special = special_ids(dictionary)
        for (s, t), (a, b) in zip(zip(src, tgt), words):
            if s in special or t in special:
                raise VecoUserError(
                    f"--align-dictionary {path}: the entry {a!r} {b!r} names the special "
                    f"symbol {dictionary[s if s in special else t]!r}: a translation is an "
                    "ordinary token; remove that entry"
                )
        if not src:
            raise VecoUserError(
                f"--align-dictionary {path}: no entry is one piece on both sides "
                f"({resolved.summary()}): DICT-MLM predicts a token's translation, so it "
                "needs token-to-token pairs"
            )
        return list(zip(src, tgt))

    @staticmethod
    def check_settings(cfg, weights):
        """``--dict-mlm-prob`` is a probability; ``--align-heldout`` scores the ``align``
        term alone."""
        prob = getattr(cfg, "dict_mlm_prob", None)
        if prob is not None:
            check_range("--dict-mlm-prob", prob, 0.0, 1.0, "a probability: give a value in [0, 1]")
        if weights.get("mono_dict") and not weights.get("align"):
            if getattr(cfg, "align_heldout", None):
                raise VecoUserError(
                    f"--align-heldout {cfg.align_heldout} scores ALIGN-MLM's align term, which "
                    "has no weight here: drop --align-heldout"
                )

    def prepare(self, model):
        self.validating = not inner_model(model).training
        device = next(inner_model(model).parameters()).device
        if device != self.device:
            self.table = self.table.to(device)
            self.validation_generator = torch.Generator(device=device)
            self.device = device

    def requests(self, kind, batch, requests):
        if kind == "mono" and self.on("mono_dict"):
            masked = batch["pair_target"].ne(self.pad)
            requests["mono_dict"] = PlugOut(batch["pair_tokens"], masked)

    def add(self, kind, batch, outputs, terms):
        if kind != "mono" or "mono_dict" not in outputs:
            return
        generator = None
        if self.validating:
            generator = self.validation_generator
            assert generator is not None
            generator.manual_seed(self.cfg.seed)
        target, swap = dictionary_targets(
            batch["pair_target"], self.table, self.cfg.dict_mlm_prob, generator
        )
        logits = outputs["mono_dict"].logits  # (M, V)
        _, gold = targets_at(target, self.pad, logits.size(0))
        term = summed(*token_scores(logits, gold))
        original = batch["pair_target"]  # (2B, T); padding maps to itself
        term["counts"] = {
            "dict_swapped": swap.sum(),
            "dict_translatable": self.table[original].ne(original).sum(),
        }
        terms["mono_dict"] = dict(term, key="mono_dict")

    @staticmethod
    def reduce_metrics(logging_outputs: List[Dict]) -> None:
        translatable = logged_total(logging_outputs, "dict_translatable")
        if translatable:
            swapped = logged_total(logging_outputs, "dict_swapped")
            metrics.log_scalar(
                "dict_swap_rate", 100.0 * swapped / translatable, translatable, round=2
            )
