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

import contextlib
import logging
import os
import sys
import tempfile
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import torch
from fairseq import checkpoint_utils
from fairseq.data import Dictionary
from fairseq.dataclass.utils import overwrite_args_by_name
from fairseq.models import ARCH_MODEL_NAME_REGISTRY, MODEL_REGISTRY
from fairseq.models.roberta import RobertaModel
from torch import Tensor
from tqdm import tqdm

from ..checkpoints.config import cfg_value
from ..checkpoints.load_errors import describe
from ..errors import VecoUserError
from ..models import layer_spec
from ..modules.pair_layout import split_pair
from .filtering import argmax_links, itermax, self_label
from .sinkhorn import similarity
from .words import pharaoh, word_links

logger = logging.getLogger(__name__)

METHODS = ("ot", "argmax", "itermax")

# the tasks whose checkpoints hold a pre-trained encoder (veco, RoBERTa, XLM-R)
ENCODER_TASKS = ("veco_pretraining", "masked_lm", "multilingual_masked_lm")

# the dictionary file a fairseq task reads from its data directory
DICT_NAME = "dict.txt"

# sentencepiece models that sit next to a checkpoint: the released XLM-R layout, then ours
SPM_NAMES = ("sentencepiece.bpe.model", "spm.model")

# ``<s> x </s> <s> y </s>``: four specials per pair
SPECIALS_PER_PAIR = 4
MIN_LENGTH_SHARE = 0.9  # a batch holds pairs of at least this share of its longest

PieceFn = Callable[[str], List[str]]


# --- loading --------------------------------------------------------------------------


def _recorded_data_dir(state: Dict) -> Optional[str]:
    """The (first) data directory the checkpoint's task was trained with, if recorded."""
    for cfg in (state.get("args"), cfg_value(state.get("cfg"), "task")):
        data = cfg_value(cfg, "data")
        if data:
            return str(data).split(os.pathsep)[0]
    return None


def find_dictionary(path: str, state: Dict, dict_path: Optional[str] = None) -> str:
    """The ``dict.txt`` of a checkpoint: ``dict_path`` (``--dict``) if given, else the one next
    to the checkpoint (the released XLM-R layout), else the one in the data directory recorded
    in the checkpoint."""
    if dict_path is not None:
        if os.path.isdir(dict_path):
            raise VecoUserError(
                f"--dict {dict_path} is a directory: name the dictionary file, e.g. "
                f"{os.path.join(dict_path, DICT_NAME)}"
            )
        if not os.path.isfile(dict_path):
            raise VecoUserError(f"--dict {dict_path}: no such file")
        return dict_path
    candidates = [os.path.join(os.path.dirname(os.path.abspath(path)), DICT_NAME)]
    recorded = _recorded_data_dir(state)
    if recorded:
        candidates.append(os.path.join(recorded, DICT_NAME))
    for candidate in candidates:
        if os.path.isfile(candidate):
            return candidate
    raise VecoUserError(
        f"--path {path}: no dictionary found (looked for {' and '.join(candidates)}): "
        "pass the dict.txt the model was trained with as --dict"
    )


@contextlib.contextmanager
def _data_dir_holding(dict_file: str) -> Iterator[str]:
    """A directory in which the task finds ``dict_file`` as ``dict.txt``: its own directory
    when it has that name, else a temporary one with a symbolic link."""
    if os.path.basename(dict_file) == DICT_NAME:
        yield os.path.dirname(os.path.abspath(dict_file))
        return
    with tempfile.TemporaryDirectory(prefix="veco-align-") as tmp:
        os.symlink(os.path.abspath(dict_file), os.path.join(tmp, DICT_NAME))
        yield tmp


def check_checkpoint_path(path: str) -> None:
    """Fail early, before anything slow, on a ``--path`` that is missing or a directory."""
    if not os.path.exists(path):
        raise VecoUserError(f"--path {path}: no such file")
    if os.path.isdir(path):
        found = sorted(f for f in os.listdir(path) if f.endswith(".pt"))
        hint = f" (it holds {', '.join(found[:4])})" if found else ""
        raise VecoUserError(
            f"--path {path} is a directory{hint}: give the checkpoint file, e.g. "
            f"{os.path.join(path, found[0] if found else 'checkpoint_best.pt')}"
        )


# what every refusal of an unreadable --path ends with
_CHECKPOINT_FIX = (
    "give a complete fairseq checkpoint (fairseq-train's checkpoint_best.pt, or the released "
    "XLM-R model.pt)"
)


def _read_checkpoint(path: str) -> Dict:
    check_checkpoint_path(path)
    try:
        state = checkpoint_utils.load_checkpoint_to_cpu(path)
    except VecoUserError as exc:  # the plugin's own diagnosis (veco_plugin.checkpoints.load_errors)
        message = str(exc) if str(exc).startswith("--path") else f"--path {exc}"
        raise VecoUserError(f"{message}: {_CHECKPOINT_FIX}") from None
    except Exception as exc:  # not a torch file, truncated, or pickled by other code
        raise VecoUserError(
            f"--path {path}: not a readable fairseq checkpoint ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}): {_CHECKPOINT_FIX}"
        ) from None
    if not isinstance(state, dict) or "model" not in state:
        raise VecoUserError(
            f"--path {path}: not a fairseq checkpoint (no 'model' entry): {_CHECKPOINT_FIX}"
        )
    if state.get("args") is None and state.get("cfg") is None:
        raise VecoUserError(
            f"--path {path}: the checkpoint records no configuration (cfg/args): "
            f"{_CHECKPOINT_FIX}"
        )
    _refuse_other_models(path, state)
    return state


def _refuse_other_models(path: str, state: Dict) -> None:
    """Refuse, before its task is set up, a checkpoint that holds no pre-trained encoder (a
    translation model from ``veco-init-nmt`` or fairseq-train, a fine-tuned classifier):
    its task would ask for files and flags these commands do not have."""
    arch, task = describe(state)
    model_class = MODEL_REGISTRY.get(ARCH_MODEL_NAME_REGISTRY.get(arch, arch))
    encoder = model_class is None or issubclass(model_class, RobertaModel)
    if encoder and task in (*ENCODER_TASKS, "?"):
        return  # a pre-trained encoder, or a checkpoint that does not say: fairseq decides
    made_from = ((state.get("extra_state") or {}).get("veco_init_nmt") or {}).get("pretrained")
    if made_from:
        fix = f"give the pre-training checkpoint veco-init-nmt made it from, {made_from}"
    else:
        fix = (
            "give the pre-training checkpoint it was initialized from (fairseq-train --task "
            "veco_pretraining, or a fairseq RoBERTa/XLM-R model.pt)"
        )
    kind = "translation" if "translation" in task else "fine-tuned"
    raise VecoUserError(
        f"--path {path} holds a {kind} model ({arch}, --task {task}), not a pre-trained "
        f"encoder: {fix}"
    )


def _embedding_rows(state: Dict) -> Optional[int]:
    for key, value in state["model"].items():
        if key.endswith("sentence_encoder.embed_tokens.weight"):
            return int(value.shape[0])
    return None


def load_model(
    path: str,
    dict_path: Optional[str] = None,
    device: Optional[torch.device] = None,
    dtype: torch.dtype = torch.float32,
) -> Tuple[RobertaModel, Dictionary]:
    """Load a ``veco`` (``veco_pretraining``) or fairseq RoBERTa/XLM-R (``masked_lm``)
    checkpoint for feature extraction: eval mode, on ``device`` in ``dtype``.

    The task is set up from the checkpoint's own configuration with its data directory
    replaced by one holding the dictionary (:func:`find_dictionary`); the veco task and
    fairseq's ``masked_lm`` only read ``dict.txt`` when set up.

    Returns:
        the model and its dictionary (``<mask>`` included, as in training).
    """
    state = _read_checkpoint(path)
    dict_file = find_dictionary(path, state, dict_path)
    with _data_dir_holding(dict_file) as data_dir:
        if state.get("args") is not None:  # legacy checkpoints (the released XLM-R)
            state["args"].data = data_dir
        if state.get("cfg") is not None:
            overwrite_args_by_name(state["cfg"], {"data": data_dir})
        try:
            models, _, task = checkpoint_utils.load_model_ensemble_and_task([path], state=state)
        except VecoUserError as exc:  # the dictionary's own refusal names our link to it
            message = str(exc).replace(os.path.join(data_dir, DICT_NAME), dict_file)
            flag = "--dict " if dict_path is not None and message.startswith(dict_file) else ""
            raise VecoUserError(f"{flag}{message}") from None
        except RuntimeError as exc:
            if "size mismatch" not in str(exc) or "embed_tokens" not in str(exc):
                raise
            flag = "--dict " if dict_path is not None else ""
            raise VecoUserError(
                f"{flag}{dict_file}: the dictionary does not fit the checkpoint's embeddings "
                f"({_embedding_rows(state)} rows): pass the dict.txt the model was trained "
                "with as --dict"
            ) from None
    model = models[0]
    if not isinstance(model, RobertaModel):
        raise VecoUserError(
            f"--path {path}: a {type(model).__name__} checkpoint, not an encoder: give a veco "
            "or fairseq RoBERTa/XLM-R checkpoint"
        )
    model.eval()
    model.to(device=device or torch.device("cpu"), dtype=dtype)
    return model, task.source_dictionary


def sentencepiece_pieces(model_path: str) -> PieceFn:
    """``word -> pieces`` of a sentencepiece model (``--spm-model``)."""
    import sentencepiece as spm

    check_spm_model(model_path)
    try:
        processor = spm.SentencePieceProcessor(model_file=model_path)
    except (OSError, RuntimeError) as exc:
        raise VecoUserError(not_a_spm_model(model_path, exc)) from None
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


def spm_model_beside(checkpoint: str) -> Optional[str]:
    """A sentencepiece model next to ``checkpoint`` (``SPM_NAMES``), or None."""
    directory = os.path.dirname(os.path.abspath(checkpoint))
    found = [os.path.join(directory, n) for n in SPM_NAMES]
    return next((f for f in found if os.path.isfile(f)), None)


def not_a_spm_model(model_path: str, exc: BaseException) -> str:
    """The refusal of an ``--spm-model`` that sentencepiece cannot load."""
    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return (
        f"--spm-model {model_path}: not a sentencepiece model ({reason}): pass the .model "
        "file the checkpoint's training text was encoded with"
    )


def check_spm_model(model_path: str) -> None:
    """Refuse an ``--spm-model`` that is missing or a directory."""
    if os.path.isdir(model_path):
        found = sorted(f for f in os.listdir(model_path) if f.endswith(".model"))
        raise VecoUserError(
            f"--spm-model {model_path} is a directory: name the sentencepiece model file, "
            f"e.g. {os.path.join(model_path, found[0] if found else SPM_NAMES[1])}"
        )
    if not os.path.isfile(model_path):
        raise VecoUserError(f"--spm-model {model_path}: no such file")


def find_spm_model(spm_model: Optional[str], checkpoint: str) -> str:
    """``--spm-model`` (checked), else a sentencepiece model next to the checkpoint
    (``SPM_NAMES``)."""
    if spm_model:
        check_spm_model(spm_model)
    found = spm_model or spm_model_beside(checkpoint)
    if not found:
        raise VecoUserError(
            f"--path {checkpoint}: no {' or '.join(SPM_NAMES)} next to it: pass the "
            "sentencepiece model it was trained with as --spm-model"
        )
    return found


def word_pieces(
    spm_model: Optional[str] = None,
    bpe_codes: Optional[str] = None,
    checkpoint: Optional[str] = None,
) -> PieceFn:
    """The subword encoder: ``--spm-model``, ``--bpe-codes``, or else a sentencepiece model
    next to ``checkpoint`` (``SPM_NAMES``: the released XLM-R layout)."""
    if spm_model and bpe_codes:
        raise VecoUserError("give --spm-model or --bpe-codes, not both")
    if bpe_codes:
        return fastbpe_pieces(bpe_codes)
    if not spm_model and checkpoint:
        spm_model = spm_model_beside(checkpoint)
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


# --- the model ------------------------------------------------------------------------


def num_layers(model: RobertaModel) -> int:
    return len(model.encoder.sentence_encoder.layers)


def default_layer(layers: int) -> int:
    """The word-alignment layer of a ``layers``-deep encoder (``layer_spec``: 8 of 12)."""
    return layer_spec.default_layer("align", layers)


def resolve_layer(model: RobertaModel, layer: Optional[int], use: str = "align") -> int:
    """``layer`` (0 = the embeddings, L = the last layer) or ``use``'s default layer
    (``layer_spec.DEFAULT_DEPTHS``); checked."""
    layers = num_layers(model)
    layer = layer_spec.default_layer(use, layers) if layer is None else layer
    if not 0 <= layer <= layers:
        raise VecoUserError(f"--layer {layer}: the model has layers 0..{layers} (0: embeddings)")
    return layer


def layer_states(model: RobertaModel, tokens: Tensor, layer: int) -> Tensor:
    """Hidden states of ``layer`` for ``tokens`` (B, T) -> (B, T, C): RoBERTa's
    ``inner_states[layer]`` (continuous positions; 0 = the embeddings), computed with
    fairseq's encoder pieces (``forward_embedding``, ``layers``) and stopping at ``layer``:
    the layers above it are never run."""
    encoder = model.encoder.sentence_encoder
    padding_mask = tokens.eq(encoder.padding_idx)
    x, _ = encoder.forward_embedding(tokens)
    x = (x * ~padding_mask.unsqueeze(-1)).transpose(0, 1)  # (T, B, C), pads zeroed
    for block in encoder.layers[:layer]:
        x = block(x, encoder_padding_mask=padding_mask)
    return x.transpose(0, 1)


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
        model: a loaded encoder (:func:`load_model`), in eval mode.
        dictionary: its dictionary; ``pieces``: ``word -> subword pieces``.
        layer: hidden layer (0 = embeddings); default :func:`default_layer`.
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
    layer = resolve_layer(model, layer)
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
