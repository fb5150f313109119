"""Word alignment with a pre-trained encoder (XLM-Align, Chi et al., 2021, §3.1, §4.3, Table 2).

A translation pair of whitespace-tokenized sentences is aligned in five steps:

1. every word is cut into subword pieces *on its own* (sentencepiece or fastBPE), so every
   piece knows the word it came from;
2. the pair is encoded as the models were trained on translation pairs (TLM input,
   ``dwa``'s self-labelling): ``<s> x </s> <s> y </s>`` in one sequence, positions running
   on through both sentences (RoBERTa's forward), truncated to the model's positions;
3. the hidden states of one layer (Table 2: layer 8 of XLM-R base's 12, hence the default
   depth 8/12) are cut back into the two sentences (``split_pair``);
4. the pieces are linked by one of three methods (``METHODS``), batched over padded pairs:

   ``ot``       XLM-Align's optimal-transport self-labelling: eq. 1, Sinkhorn (eqs. 3-6) and
                iterative alignment filtering (eqs. 7-9), as ``dwa`` labels during training;
   ``argmax``   SimAlign's argmax: forward ∩ backward argmax (eq. 7) of K = exp(f_sim);
   ``itermax``  SimAlign's itermax: eqs. 7-9 on K = exp(f_sim) instead of the plan A*;

5. two words align if any of their pieces do (§4.3), written as Pharaoh ``i-j`` (0-based).

Pieces are encoded per sentence in Python; everything from the forward to the word links runs
on whole batches of pairs, sorted by length and restored to input order.
"""

import logging
import os
import sys
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import torch
from fairseq.data import Dictionary
from fairseq.models.roberta import RobertaModel
from torch import Tensor
from tqdm import tqdm

from ..checkpoints.encoder import load_spm_model, locate_spm_model
from ..errors import VecoUserError
from ..models.features import layer_states, resolve_layer
from ..modules.pair_layout import split_pair
from .filtering import argmax_links, itermax, self_label
from .sinkhorn import similarity
from .words import pharaoh, word_links

logger = logging.getLogger(__name__)

METHODS = ("ot", "argmax", "itermax")

# ``<s> x </s> <s> y </s>``: four specials per pair
SPECIALS_PER_PAIR = 4
MIN_LENGTH_SHARE = 0.9  # a batch holds pairs of at least this share of its longest

PieceFn = Callable[[str], List[str]]


def sentencepiece_pieces(model_path: str) -> PieceFn:
    """``word -> pieces`` of a sentencepiece model (``--spm-model``)."""
    processor = load_spm_model(model_path)
    return lambda word: processor.encode(word, out_type=str)


def fastbpe_pieces(codes_path: str) -> PieceFn:
    """``word -> pieces`` of fastBPE codes (``--bpe-codes``), by fairseq's ``fastbpe``."""
    from fairseq.data.encoders.fastbpe import fastBPE, fastBPEConfig

    if not os.path.isfile(codes_path):
        raise VecoUserError(f"--bpe-codes {codes_path}: no such file")
    try:
        bpe = fastBPE(fastBPEConfig(bpe_codes=codes_path))
    except ImportError:
        raise VecoUserError(
            "--bpe-codes needs the fastBPE module, which is not installed: run "
            "scripts/install-fastbpe.sh (or use --spm-model)"
        ) from None
    return lambda word: bpe.encode(word).split()


def word_pieces(
    spm_model: Optional[str] = None,
    bpe_codes: Optional[str] = None,
    checkpoint: Optional[str] = None,
) -> PieceFn:
    """The subword encoder: ``--spm-model``, ``--bpe-codes``, or else the sentencepiece
    model of ``checkpoint`` (next to it, else in its training data:
    :func:`..checkpoints.encoder.locate_spm_model`)."""
    if spm_model and bpe_codes:
        raise VecoUserError("give --spm-model or --bpe-codes, not both")
    if bpe_codes:
        return fastbpe_pieces(bpe_codes)
    if not spm_model and checkpoint:
        spm_model, _ = locate_spm_model(checkpoint)
        if spm_model:
            logger.info("subwords: %s", spm_model)
    if not spm_model:
        raise VecoUserError(
            "give the subword model the checkpoint was trained with: --spm-model MODEL "
            "(sentencepiece) or --bpe-codes CODES (fastBPE)"
        )
    return sentencepiece_pieces(spm_model)


# --- encoding -------------------------------------------------------------------------

# a share of <unk> pieces above which the subword model and the dictionary cannot be a pair
UNKNOWN_SHARE = 0.5


def warn_unknown_pieces(sentences: Sequence[Sequence[int]], dictionary: Dictionary) -> None:
    """One warning line when most pieces of ``sentences`` (dictionary ids) are ``<unk>``:
    the subword model is not the one the dictionary was built with."""
    pieces = sum(len(ids) for ids in sentences)
    unknown = sum(ids.count(dictionary.unk()) for ids in sentences)
    if pieces and unknown > UNKNOWN_SHARE * pieces:
        logger.warning(
            "%d of %d pieces (%.0f%%) are not in the dictionary (<unk>): is --spm-model (or "
            "--bpe-codes) the subword model of this checkpoint and --dict its dictionary?",
            unknown,
            pieces,
            100 * unknown / pieces,
        )


@dataclass
class EncodedSentence:
    """One sentence as dictionary ids of its pieces, without ``<s>`` and ``</s>``."""

    ids: List[int]  # (n,) piece ids
    words: List[int]  # (n,) index of the word each piece belongs to
    n_words: int  # words of the line (pieces of the last ones may have been truncated)

    def truncated(self, n: int) -> "EncodedSentence":
        return EncodedSentence(self.ids[:n], self.words[:n], self.n_words)


def encode_sentence(
    line: str, pieces: PieceFn, dictionary: Dictionary, cache: Optional[Dict] = None
) -> EncodedSentence:
    """Whitespace-split ``line``, then encode each word on its own; ``cache`` memoizes
    ``word -> ids`` across calls."""
    cache = {} if cache is None else cache
    ids: List[int] = []
    words: List[int] = []
    tokens = line.split()
    for i, word in enumerate(tokens):
        word_ids = cache.get(word)
        if word_ids is None:
            word_ids = cache[word] = [dictionary.index(p) for p in pieces(word)]
        ids.extend(word_ids)
        words.extend([i] * len(word_ids))
    return EncodedSentence(ids, words, len(tokens))


def fit_pair(n_src: int, n_tgt: int, budget: int) -> Tuple[int, int]:
    """Pieces kept of each side so that ``n_src + n_tgt <= budget``: unchanged when they fit,
    else each side cut in proportion to its length (the source rounded down)."""
    if n_src + n_tgt <= budget:
        return n_src, n_tgt
    keep_src = budget * n_src // (n_src + n_tgt)
    return keep_src, budget - keep_src  # budget - keep_src <= n_tgt since budget < total


@dataclass
class PairBatch:
    """Padded concatenated pairs and where their words are."""

    tokens: Tensor  # (B, T) <s> x </s> <s> y </s>, right-padded
    first_lengths: Tensor  # (B,) |x| + 2, where y's <s> starts
    src_words: Tensor  # (B, W) word index per position of the x half; -1: <s>, </s>, pad
    tgt_words: Tensor  # (B, W) the same for the y half (``split_pair`` layout)
    n_src_words: int  # Wn, most source words of a pair
    n_tgt_words: int  # Wm

    @property
    def width(self) -> int:
        return self.src_words.size(1)

    def to(self, device: torch.device) -> "PairBatch":
        return PairBatch(
            self.tokens.to(device),
            self.first_lengths.to(device),
            self.src_words.to(device),
            self.tgt_words.to(device),
            self.n_src_words,
            self.n_tgt_words,
        )


def collate(
    pairs: Sequence[Tuple[EncodedSentence, EncodedSentence]], dictionary: Dictionary
) -> PairBatch:
    """Concatenate each pair as ``<s> x </s> <s> y </s>`` and pad the batch."""
    bos, eos, pad = dictionary.bos(), dictionary.eos(), dictionary.pad()
    rows = [[bos, *x.ids, eos, bos, *y.ids, eos] for x, y in pairs]
    width = max(len(s.ids) + 2 for pair in pairs for s in pair)
    tokens = torch.full((len(pairs), max(map(len, rows))), pad, dtype=torch.long)
    src_words = torch.full((len(pairs), width), -1, dtype=torch.long)
    tgt_words = torch.full((len(pairs), width), -1, dtype=torch.long)
    for b, (row, (x, y)) in enumerate(zip(rows, pairs)):
        tokens[b, : len(row)] = torch.tensor(row)
        src_words[b, 1 : len(x.words) + 1] = torch.tensor(x.words, dtype=torch.long)
        tgt_words[b, 1 : len(y.words) + 1] = torch.tensor(y.words, dtype=torch.long)
    return PairBatch(
        tokens=tokens,
        first_lengths=torch.tensor([len(x.ids) + 2 for x, _ in pairs]),
        src_words=src_words,
        tgt_words=tgt_words,
        n_src_words=max(x.n_words for x, _ in pairs),
        n_tgt_words=max(y.n_words for _, y in pairs),
    )


# --- alignment math (batched) ---------------------------------------------------------


def piece_links(x: Tensor, y: Tensor, x_mask: Tensor, y_mask: Tensor, method: str) -> Tensor:
    """Links between the pieces of both sentences by ``method`` (see the module docstring).

    Args:
        x: (B, n, C) source hidden states; y: (B, m, C) target hidden states.
        x_mask: (B, n) bool, True = a source piece; y_mask: (B, m) bool, likewise.
    Returns:
        (B, n, m) bool links, only between pieces.
    """
    if method == "ot":
        return self_label(x, y, x_mask, y_mask)
    if method not in METHODS:
        raise ValueError(f"unknown alignment method {method!r}; one of {', '.join(METHODS)}")
    kernel = similarity(x, y).exp()  # (B, n, m) K = exp(f_sim), eqs. 1 and 5 with mu = 1
    if method == "argmax":
        forward, backward = argmax_links(kernel, x_mask, y_mask)
        return forward & backward
    return itermax(kernel, x_mask, y_mask)


def links_from_hidden(hidden: Tensor, batch: PairBatch, method: str) -> Tensor:
    """Word links of a batch from the hidden states of its concatenated pairs.

    Args:
        hidden: (B, T, C) states of ``batch.tokens`` at the alignment layer.
    Returns:
        (B, Wn, Wm) bool: source word i -- target word j (any of their pieces linked).
    """
    x, y = split_pair(hidden, batch.first_lengths, batch.width)  # (B, W, C) each
    x_mask, y_mask = batch.src_words.ge(0), batch.tgt_words.ge(0)  # (B, W)
    links = piece_links(x, y, x_mask, y_mask, method)  # (B, W, W)
    return word_links(links, batch.src_words, batch.tgt_words, batch.n_src_words, batch.n_tgt_words)


# --- aligning -----------------------------------------------------------------------


def _batches(
    order: Sequence[int], lengths: Sequence[int], batch_size: int, max_tokens: Optional[int]
) -> Iterator[List[int]]:
    """Consecutive runs of ``order`` (longest first) of at most ``batch_size`` pairs and, with
    ``max_tokens``, at most that many padded tokens (a longer single pair still runs alone).
    A run also ends before a pair shorter than ``MIN_LENGTH_SHARE`` of its longest, so no pair
    is padded by more than 1/0.9 - 1 = 11 % of its length: padding is work of the full
    forward (on gettext pairs, fixed runs of 32 computed 1.69x the real tokens)."""
    batch: List[int] = []
    for i in order:
        longest = lengths[batch[0]] if batch else lengths[i]
        over_budget = max_tokens is not None and (len(batch) + 1) * longest > max_tokens
        too_short = lengths[i] < MIN_LENGTH_SHARE * longest
        if batch and (len(batch) == batch_size or over_budget or too_short):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


def encode_pairs(
    src_lines: Sequence[str],
    tgt_lines: Sequence[str],
    pieces: PieceFn,
    dictionary: Dictionary,
    max_positions: int,
) -> Tuple[List[Tuple[EncodedSentence, EncodedSentence]], int]:
    """Encode every pair, truncating pairs over ``max_positions`` tokens (:func:`fit_pair`).

    Returns:
        the encoded pairs and how many were truncated.
    """
    budget = max(0, max_positions - SPECIALS_PER_PAIR)
    cache: Dict[str, List[int]] = {}
    pairs, truncated = [], 0
    for src, tgt in zip(src_lines, tgt_lines):
        x = encode_sentence(src, pieces, dictionary, cache)
        y = encode_sentence(tgt, pieces, dictionary, cache)
        keep_x, keep_y = fit_pair(len(x.ids), len(y.ids), budget)
        if (keep_x, keep_y) != (len(x.ids), len(y.ids)):
            truncated += 1
            x, y = x.truncated(keep_x), y.truncated(keep_y)
        pairs.append((x, y))
    return pairs, truncated


@torch.inference_mode()
def align_pairs(
    model: RobertaModel,
    dictionary: Dictionary,
    pieces: PieceFn,
    src_lines: Sequence[str],
    tgt_lines: Sequence[str],
    layer: Optional[int] = None,
    method: str = "ot",
    batch_size: int = 32,
    max_tokens: Optional[int] = None,
    progress: bool = False,
) -> List[str]:
    """Word-align line-aligned, whitespace-tokenized sentences.

    Args:
        model: a loaded encoder (``checkpoints.encoder.load_encoder``), in eval mode.
        dictionary: its dictionary; ``pieces``: ``word -> subword pieces``.
        layer: hidden layer (0 = embeddings); default ``layer_spec``'s "align" layer.
        method: one of ``METHODS``.
        batch_size: pairs per forward; ``max_tokens``: padded tokens per forward.
        progress: a tqdm bar on stderr.
    Returns:
        one Pharaoh line per pair, in input order: ``"i-j ..."``, 0-based word indices, ``""``
        for a pair without links (an empty sentence included).
    """
    if len(src_lines) != len(tgt_lines):
        raise VecoUserError(f"{len(src_lines)} source but {len(tgt_lines)} target sentences")
    if method not in METHODS:
        raise VecoUserError(f"unknown method {method!r}; one of {', '.join(METHODS)}")
    if batch_size < 1:
        raise VecoUserError(f"--batch-size {batch_size}: must be at least 1")
    if max_tokens is not None and max_tokens < 1:
        raise VecoUserError(f"--max-tokens {max_tokens}: must be at least 1")
    layer = resolve_layer(model, layer, "align")
    max_positions = int(model.max_positions())
    pairs, truncated = encode_pairs(src_lines, tgt_lines, pieces, dictionary, max_positions)
    if truncated:
        logger.warning(
            "%d of %d pairs exceed the model's %d positions: each side truncated in proportion "
            "to its length; words past the cut stay unaligned",
            truncated,
            len(pairs),
            max_positions,
        )
    warn_unknown_pieces([s.ids for pair in pairs for s in pair], dictionary)
    out = [""] * len(pairs)
    todo = [i for i, (x, y) in enumerate(pairs) if x.ids and y.ids]  # else: no links
    lengths = [len(x.ids) + len(y.ids) + SPECIALS_PER_PAIR for x, y in pairs]
    order = sorted(todo, key=lambda i: -lengths[i])
    device = next(model.parameters()).device
    with tqdm(
        total=len(pairs), unit="pair", disable=not progress, file=sys.stderr, dynamic_ncols=True
    ) as bar:
        bar.update(len(pairs) - len(todo))
        for ids in _batches(order, lengths, batch_size, max_tokens):
            batch = collate([pairs[i] for i in ids], dictionary).to(device)
            hidden = layer_states(model, batch.tokens, layer)  # (B, T, C)
            links = links_from_hidden(hidden, batch, method).cpu()  # (B, Wn, Wm)
            for b, i in enumerate(ids):
                out[i] = pharaoh(links[b, : pairs[i][0].n_words, : pairs[i][1].n_words])
            bar.update(len(ids))
    return out
