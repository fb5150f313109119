"""DICT-MLM's masked LM with a bilingual dictionary (``mono_dict``), in two modes
(``--dict-mlm-mode``).

``code_switch`` (the default; ALIGN-MLM §3 and App. G.4 as its authors ran it, their
collator ``data_collator_dict_mlm.py``): the *input* is code-switched. Of the positions
selected for prediction (``M``, the task's ``--mask-prob`` draw), each independently
joins the switched half ``S`` with probability ``p`` (``--dict-mlm-prob``, 0.5)::

    x'_i = table[x_i]        i in S       (its translation; x_i itself, unmasked, when
                                            the token has none)
    x'_i = BERT(x_i)         i in M \\ S   (the task's 80 / 10 / 10: <mask>, random, kept)
    y_i  = x_i               i in M       (every target the original token)

The task has already applied 80/10/10 to every position of ``M``, drawn independently
of ``S``; writing ``table[x_i]`` over the positions of ``S`` leaves the collator's
distribution given ``M``. Two differences remain in ``M`` and BERT's random tokens (the
task's :class:`~veco_plugin.data.masking.MaskingScheme`, shared by every objective): the
collator selects each token by a Bernoulli(0.15), the task selects ``int(0.15 n + U)`` of a
segment's ``n`` tokens (the same mean, a smaller variance, at least one); and the
collator draws random replacements from the natural language's ids only, the task from
both languages' (1.5 % of the tokens). With ``--language-embeddings``/``--token-languages``
(:mod:`..modules.language_embedding`) a token's language is a lookup by the token, so a
swapped token carries its translation's language, as the collator sets the swapped
token's language ID. (One difference remains: the collator's random replacement keeps the
sentence's language ID, ours gives the random token its own.)

``synonym_target`` (Chaudhary et al. 2020, DICT-MLM-50): the input stays masked as for
MLM and the *target* changes: at each selected position independently the target is the
token's translation with probability ``p`` when it has one, the original otherwise.

The translations come from ``--align-dictionary``, read by ALIGN-MLM's loader
(``dictionary_alignment.resolve_dictionary``: the two objectives of one experiment read
one dictionary the same way): a MUSE word list through sentencepiece, a resolved
``align_dictionary.tsv``, or, with ``--align-dictionary-pieces``, lines of two
``dict.txt`` symbols looked up as they are (``veco-derive-language``'s ``bilingual.txt``:
a piece and its copy; ``bilingual_dictionary.read_token_pairs``). Every entry whose two
sides are one piece each is a token translation (an entry with a multi-piece side has no
one token to swap and is skipped). Each pair translates both ways (``src -> tgt`` and
``tgt -> src``); a token listed with several translations keeps the first in file order,
the forward direction first.
:func:`translation_table` turns them into one lookup ``(V,)`` built once;
:func:`code_switched_inputs` and :func:`dictionary_targets` are the two swaps.

Randomness: in training, the global torch generator, which fairseq-train seeds before
every update with ``--seed`` + the update number (``Trainer._set_seed``), as dropout;
at validation a generator seeded with ``--seed`` at every batch, so the valid loss is a
function of the model alone. Logged: ``mono_dict_loss``/``_acc`` and ``dict_swap_rate``:
the share (%) of selected translatable positions that were swapped (input or target by
the mode; about 100 p)."""

import logging
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import torch
from fairseq import metrics
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from omegaconf import II
from torch import Tensor

from ..data.bilingual_dictionary import ResolvedDictionary, special_ids
from ..errors import VecoUserError
from ..models.requests import Packing, PlugOut
from .base import VecoTerm, check_range, inner_model
from .dictionary_alignment import resolve_dictionary
from .scores import logged_total, summed, targets_at, token_scores

logger = logging.getLogger(__name__)


CODE_SWITCH, SYNONYM_TARGET = "code_switch", "synonym_target"
DICT_MLM_MODES = ChoiceEnum([CODE_SWITCH, SYNONYM_TARGET])


@dataclass
class DictMlmSettings(FairseqDataclass):
    dict_mlm_mode: DICT_MLM_MODES = field(  # type: ignore[valid-type]
        default=CODE_SWITCH,
        metadata={
            "help": "DICT-MLM: code_switch (ALIGN-MLM's authors' collator: a selected "
            "input token swapped to its translation, the original its target) or "
            "synonym_target (Chaudhary et al.: input masked, target swapped)"
        },
    )
    dict_mlm_prob: float = field(
        default=0.5,
        metadata={
            "help": "DICT-MLM: probability that a position selected for prediction is "
            "swapped to its translation in --align-dictionary (the input with "
            "code_switch, the target with synonym_target; paper: 0.5)"
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


def code_switched_inputs(
    tokens: Tensor,
    target: Tensor,
    table: Tensor,
    prob: float,
    pad: int,
    generator: Optional[torch.Generator] = None,
) -> Tuple[Tensor, Tensor, Tensor]:
    """The authors' code-switched input: each selected position (``target != pad``)
    joins the switched half with probability ``prob``, independently, and there takes
    ``table[target]`` (the translation, or the original token itself, unmasked, when it
    has none); every other position keeps ``tokens`` (the task's 80/10/10 input).

    Args:
        tokens: (B, T) int64, the masked input
        target: (B, T) int64, the original tokens at the selected positions, ``pad``
            elsewhere (the labels, unchanged)
        table: (V,) int64, :func:`translation_table`
        generator: the draws' generator (default: torch's global one)
    Returns:
        (B, T) the input, (B, T) bool the switched half, (B, T) bool where a token was
        swapped to its translation; no host sync.
    """
    translated = table[target]  # (B, T); padding maps to itself
    draws = torch.rand(target.shape, generator=generator, device=target.device)
    switched = (draws < prob) & target.ne(pad)
    swap = switched & translated.ne(target)
    return torch.where(switched, translated, tokens), switched, swap


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
    """``mono_dict``: summed CE of the LM logits at the selected positions of each
    monolingual pair (both segments, a plug-out forward as XLM's MLM): ``code_switch``,
    on :func:`code_switched_inputs` against the originals; ``synonym_target``, on the
    masked input against :func:`dictionary_targets`."""

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
            "(%d entries with a multi-piece side skipped), %s, p = %g",
            path,
            translated,
            len(pairs),
            skipped,
            cfg.dict_mlm_mode,
            cfg.dict_mlm_prob,
        )
        self.code_switch = cfg.dict_mlm_mode == CODE_SWITCH
        self.device: Optional[torch.device] = None
        self.validation_generator: Optional[torch.Generator] = None
        self.swap: Optional[Tensor] = None  # (2B, T) the mono batch's swaps (code_switch)

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

    def _generator(self) -> Optional[torch.Generator]:
        """The draws' generator: torch's global one in training, the seeded one at
        validation."""
        if not self.validating:
            return None
        assert self.validation_generator is not None
        return self.validation_generator.manual_seed(self.cfg.seed)

    def requests(self, kind, batch, requests):
        if kind == "mono" and self.on("mono_dict"):
            target = batch["pair_target"]  # (2B, T)
            tokens = batch["pair_tokens"]
            if self.code_switch:
                tokens, _, self.swap = code_switched_inputs(
                    tokens, target, self.table, self.cfg.dict_mlm_prob, self.pad, self._generator()
                )
            requests["mono_dict"] = PlugOut(
                tokens,
                target.ne(self.pad),
                masked_count=batch.get("pair_masked"),
                padded=batch.get("pair_padded", True),
                packing=Packing.of(batch, "pair"),
            )

    def add(self, kind, batch, outputs, terms):
        if kind != "mono" or "mono_dict" not in outputs:
            return
        if self.code_switch:
            assert self.swap is not None  # drawn with the request
            target, swap = batch["pair_target"], self.swap
        else:
            target, swap = dictionary_targets(
                batch["pair_target"], self.table, self.cfg.dict_mlm_prob, self._generator()
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
