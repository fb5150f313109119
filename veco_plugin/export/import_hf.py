"""Read a Hugging Face XLM-R directory into fairseq's released XLM-R layout.

The directory (``config.json``, ``model.safetensors`` or ``pytorch_model.bin``, sharded or
not, ``sentencepiece.bpe.model``, optionally ``tokenizer.json``) of an
``XLMRobertaForMaskedLM``, ``XLMRobertaModel`` or ``XLMRobertaForSequenceClassification``
becomes, as ``xlmr.base.tar.gz`` unpacks:

* ``model.pt``: a fairseq RoBERTa checkpoint (``--task masked_lm --arch roberta`` with the
  config's sizes; its ``cfg`` plain containers, so that torch's weights-only unpickler
  reads it);
* ``dict.txt``: sentencepiece pieces 3.. in id order (fairseq id = sentencepiece id + 1;
  ``<s>`` 0, ``<pad>`` 1, ``</s>`` 2, ``<unk>`` 3 are fairseq's, ``<mask>`` last is added
  by the task);
* ``sentencepiece.bpe.model``: copied.

The weights go through :func:`.keymap.from_transformers` (the export's table backwards) and
are then loaded, strictly, into the fairseq model the checkpoint's ``cfg`` builds: what is
written is that model's ``state_dict``. Needs no ``transformers``: ``config.json`` and
``tokenizer.json`` are read as JSON, safetensors with the ``safetensors`` package.
"""

import json
import logging
import math
import os
import shutil
from dataclasses import dataclass
from typing import Any, Dict, List

import torch
from torch import Tensor

from ..errors import VecoUserError
from ..outputs import staged_dir
from .hf import SPM_FILE, TOKENIZER_FILE, EncoderShape
from .keymap import LM_HEAD, ImportReport, from_transformers
from .tokenizer import MASK, SPECIALS

logger = logging.getLogger(__name__)

CONFIG_FILE = "config.json"
CHECKPOINT_FILE = "model.pt"
DICT_FILE = "dict.txt"
# in the order transformers prefers them; an index lists the shards of a sharded one
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
INDEX_SUFFIX = ".index.json"

# transformers hidden_act -> fairseq --activation-fn (the same function)
ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_accurate", "relu": "relu"}
LAYER_NORM_EPS = 1e-5  # fairseq's RoBERTa LayerNorm, fixed
PAD = 1  # fairseq's <pad>: position ids count from it in both toolkits
SEED = 1  # fairseq's initialization of an LM head the model lacks
# the sizes config.json must give
SIZES = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
)
# the sentencepiece pieces XLM-R's layout puts first (ids 0, 1, 2)
SPM_SPECIALS = ("<unk>", "<s>", "</s>")


@dataclass
class ImportResult:
    """What :func:`import_model` wrote."""

    shape: EncoderShape
    report: ImportReport
    weights: str  # the weights file read
    symbols: int  # dictionary size, <mask> included


# --- config.json -----------------------------------------------------------------------


def _read_json(path: str) -> Any:
    """The JSON value in ``path``; a file that is not UTF-8 JSON is a :class:`VecoUserError`."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise VecoUserError(f"{path}: not JSON ({exc})") from None


def read_config(hf_dir: str) -> Dict[str, Any]:
    path = os.path.join(hf_dir, CONFIG_FILE)
    if not os.path.isfile(path):
        raise VecoUserError(f"{hf_dir}: no {CONFIG_FILE}: not a Hugging Face model directory")
    config = _read_json(path)
    if not isinstance(config, dict):
        raise VecoUserError(f"{path}: not a model config (a JSON object)")
    return config


def encoder_shape(config: Dict[str, Any], path: str) -> EncoderShape:
    """The sizes of an XLM-R ``config`` (read from ``path``); refuse what fairseq's RoBERTa
    cannot express. The inverse of :func:`.hf.xlmr_config`."""
    kind = config.get("model_type")
    if kind != "xlm-roberta":
        raise VecoUserError(
            f"{path}: model_type {kind!r}, not 'xlm-roberta': only XLM-R-layout models "
            "(XLM-R, InfoXLM, XLM-Align, VECO) import"
        )
    refused = {
        "position_embedding_type": ("absolute", "relative positions"),
        "is_decoder": (False, "a decoder"),
        "add_cross_attention": (False, "cross-attention"),
    }
    for key, (fine, what) in refused.items():
        if config.get(key, fine) != fine:
            raise VecoUserError(
                f"{path}: {key} {config[key]!r} ({what}): fairseq's RoBERTa has no such"
            )
    act = config.get("hidden_act", "gelu")
    if act not in ACTIVATIONS:
        raise VecoUserError(f"{path}: hidden_act {act!r}: one of {', '.join(ACTIVATIONS)} imports")
    eps = config.get("layer_norm_eps", 1e-12)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise VecoUserError(f"{path}: layer_norm_eps {eps!r}: not a number")
    if not math.isclose(eps, LAYER_NORM_EPS, rel_tol=1e-6):
        raise VecoUserError(
            f"{path}: layer_norm_eps {eps:g}: fairseq's RoBERTa layer norms have {LAYER_NORM_EPS:g}"
        )
    if config.get("pad_token_id", PAD) != PAD:
        raise VecoUserError(
            f"{path}: pad_token_id {config['pad_token_id']}: XLM-R's (and fairseq's) is {PAD}"
        )
    if config.get("type_vocab_size") not in (None, 0, 1):
        raise VecoUserError(
            f"{path}: type_vocab_size {config['type_vocab_size']}: fairseq's RoBERTa has no "
            "token types (only a one-type model, as every XLM-R, imports)"
        )
    sizes = {key: _size(config, key, path) for key in SIZES}
    shape = EncoderShape(
        vocab=sizes["vocab_size"],
        dim=sizes["hidden_size"],
        layers=sizes["num_hidden_layers"],
        heads=sizes["num_attention_heads"],
        ffn=sizes["intermediate_size"],
        positions=sizes["max_position_embeddings"],
        activation=ACTIVATIONS[act],
        eps=eps,
        dropout=probability(config, "hidden_dropout_prob", path),
        attention_dropout=probability(config, "attention_probs_dropout_prob", path),
    )
    if shape.dim % shape.heads:
        raise VecoUserError(
            f"{path}: hidden_size {shape.dim} is not a multiple of num_attention_heads "
            f"{shape.heads}: not a config an XLM-R model was made with"
        )
    if shape.positions <= PAD + 1:
        raise VecoUserError(f"{path}: max_position_embeddings {shape.positions}: too few")
    return shape


def _size(config: Dict[str, Any], key: str, path: str) -> int:
    """The positive whole number ``config[key]``."""
    if key not in config:
        raise VecoUserError(f"{path}: no {key}: not a complete XLM-R config")
    value = config[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise VecoUserError(f"{path}: {key} {value!r}: a size, a whole number of 1 or more")
    return value


def probability(config: Dict[str, Any], key: str, path: str, default: float = 0.1) -> float:
    """The dropout probability ``config[key]`` (``default`` when absent or null), in [0, 1)."""
    value = config.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise VecoUserError(f"{path}: {key} {value!r}: a dropout probability, in [0, 1)")
    return float(value)


# --- weights ---------------------------------------------------------------------------


def weights_file(hf_dir: str) -> str:
    """The weights file (or shard index) transformers would read."""
    for name in WEIGHT_FILES:
        for candidate in (name, name + INDEX_SUFFIX):
            path = os.path.join(hf_dir, candidate)
            if os.path.isfile(path):
                return path
    raise VecoUserError(
        f"{hf_dir}: no weights: expected {' or '.join(WEIGHT_FILES)} (PyTorch weights; "
        "TensorFlow/Flax-only directories do not import)"
    )


def _read_one(path: str) -> Dict[str, Tensor]:
    if path.endswith(".safetensors"):
        try:
            from safetensors.torch import load_file
        except ImportError:
            raise VecoUserError(
                f"{path}: reading safetensors needs the safetensors package: pip install "
                "safetensors"
            ) from None
        try:
            return load_file(path, device="cpu")
        except Exception as exc:  # safetensors' SafetensorError, OSError
            raise VecoUserError(f"{path}: not a readable safetensors file ({exc})") from None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # truncated, not a torch file, or pickled objects
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise VecoUserError(
            f"{path}: not a readable PyTorch state dict ({type(exc).__name__}: {first})"
        ) from None
    if not isinstance(state, dict):
        raise VecoUserError(f"{path}: not a state dict")
    return state


def read_weights(path: str) -> Dict[str, Tensor]:
    """The tensors of a weights file or of every shard its index lists."""
    if not path.endswith(INDEX_SUFFIX):
        return _read_one(path)
    index = _read_json(path)
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise VecoUserError(
            f"{path}: no weight_map: not a shard index (remove it, or restore the one "
            "transformers wrote)"
        )
    shards = sorted(set(map(str, weight_map.values())))
    state: Dict[str, Tensor] = {}
    for shard in shards:
        shard_path = os.path.join(os.path.dirname(path), shard)
        if not os.path.isfile(shard_path):
            raise VecoUserError(f"{path} lists {shard}, which is missing")
        state.update(_read_one(shard_path))
    return state


# --- dictionary ------------------------------------------------------------------------


def spm_symbols(spm_path: str) -> List[str]:
    """fairseq's dictionary of an XLM-R-layout sentencepiece model, ``<mask>`` included:
    ``<s> <pad> </s> <unk>``, pieces 3.. (id = piece id + 1), ``<mask>``."""
    import sentencepiece as spm

    try:
        sp = spm.SentencePieceProcessor(model_file=spm_path)
    except Exception as exc:  # sentencepiece raises RuntimeError/OSError on a bad file
        raise VecoUserError(f"{spm_path}: not a sentencepiece model ({exc})") from None
    first = [sp.id_to_piece(i) for i in range(min(3, sp.get_piece_size()))]
    layout = sp.get_piece_size() > 3 and sp.is_unknown(0) and sp.is_control(1) and sp.is_control(2)
    if not layout or first[1:] != list(SPM_SPECIALS[1:]):
        raise VecoUserError(
            f"{spm_path}: pieces 0-2 are {first}, not XLM-R's <unk> <s> </s>: transformers' "
            "XLM-R tokenizer and fairseq's dictionary assume that layout"
        )
    return list(SPECIALS) + [sp.id_to_piece(i) for i in range(3, sp.get_piece_size())] + [MASK]


def check_tokenizer_json(path: str, symbols: List[str]) -> None:
    """Refuse a ``tokenizer.json`` whose vocabulary is not ``symbols`` at the same ids."""
    tokenizer = _read_json(path)
    model = tokenizer.get("model") if isinstance(tokenizer, dict) else None
    if not isinstance(model, dict):
        raise VecoUserError(
            f"{path}: no tokenizer model: not a tokenizers file (remove it: {SPM_FILE} "
            "alone is imported)"
        )
    vocab = model.get("vocab")
    if model.get("type") != "Unigram" or not isinstance(vocab, list):
        raise VecoUserError(
            f"{path}: a {model.get('type')} tokenizer, not XLM-R's sentencepiece unigram"
        )
    theirs = [entry[0] if isinstance(entry, list) and entry else None for entry in vocab]
    if theirs != symbols:
        wrong = next((i for i, (a, b) in enumerate(zip(theirs, symbols)) if a != b), None)
        where = (
            f"id {wrong} is {theirs[wrong]!r} there, {symbols[wrong]!r} here"
            if wrong is not None
            else f"{len(theirs)} symbols there, {len(symbols)} here"
        )
        raise VecoUserError(
            f"{path} does not match {SPM_FILE} ({where}): give the sentencepiece model "
            "this tokenizer was made from"
        )


# --- fairseq ---------------------------------------------------------------------------


def fairseq_cfg(shape: EncoderShape, data_dir: str, pooler_dropout: float) -> Any:
    """The ``cfg`` of a fairseq ``masked_lm``/``roberta`` model of ``shape``, parsed by
    fairseq's own training parser."""
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    max_positions = shape.positions - PAD - 1  # fairseq's table has PAD + 1 more rows
    flags = {
        "task": "masked_lm",
        "criterion": "masked_lm",
        "arch": "roberta",
        "encoder_layers": shape.layers,
        "encoder_embed_dim": shape.dim,
        "encoder_ffn_embed_dim": shape.ffn,
        "encoder_attention_heads": shape.heads,
        "activation_fn": shape.activation,
        "dropout": shape.dropout,
        "attention_dropout": shape.attention_dropout,
        "pooler_dropout": pooler_dropout,
        "max_positions": max_positions,
        "tokens_per_sample": max_positions,
    }
    argv = [data_dir] + [a for k, v in flags.items() for a in (f"--{k.replace('_', '-')}", str(v))]
    parser = options.get_training_parser()
    return convert_namespace_to_omegaconf(options.parse_args_and_arch(parser, argv))


def build_model(cfg: Any, state: Dict[str, Tensor], report: ImportReport, head_name: str):
    """The fairseq model of ``cfg`` (its task reads ``dict.txt`` from ``cfg.task.data``)
    with ``state`` loaded strictly; only the version buffers and the LM head of a model
    without one keep the fresh model's values."""
    from fairseq import tasks

    task = tasks.setup_task(cfg.task)
    torch.manual_seed(SEED)
    model = task.build_model(cfg.model)
    if report.classes:
        dense = state[f"classification_heads.{head_name}.dense.weight"]
        model.register_classification_head(head_name, report.classes, int(dense.size(0)))
    fresh = {
        k: v
        for k, v in model.state_dict().items()
        if k.endswith(".version") or (not report.head and k.startswith(LM_HEAD))
    }
    try:
        model.load_state_dict({**fresh, **state}, strict=True)
    except RuntimeError as exc:  # torch's missing/unexpected/size-mismatch report
        first = str(exc).splitlines()[1].strip() if "\n" in str(exc) else str(exc)
        raise VecoUserError(
            f"the fairseq model does not take the imported weights ({first}): not an XLM-R "
            "layout fairseq's RoBERTa expresses"
        ) from None
    return model.eval()


def checkpoint_state(cfg: Any, model: torch.nn.Module) -> Dict[str, Any]:
    """A fairseq checkpoint of ``model``: the state fairseq's trainer would write before
    the first update, ``cfg`` as plain containers."""
    from omegaconf import OmegaConf

    container: Dict[str, Any] = OmegaConf.to_container(  # type: ignore[assignment]
        cfg, resolve=True, enum_to_str=True
    )
    model_cfg = dict(vars(container["model"]))  # RoBERTa's argparse Namespace, as a dict
    # a dict config takes only the overrides it has keys for (a Namespace takes all): the
    # hub's from_pretrained(...) registers the checkpoint's classification heads with this
    model_cfg.setdefault("load_checkpoint_heads", False)
    container["model"] = model_cfg
    return {
        "cfg": container,
        "model": model.state_dict(),
        "optimizer_history": [
            {
                "criterion_name": "MaskedLmLoss",
                "optimizer_name": "none",
                "lr_scheduler_state": {},
                "num_updates": 0,
            }
        ],
        "extra_state": {},
        "last_optimizer_state": None,
    }


def import_model(
    hf_dir: str, output: str, head_name: str = "sentence_classification_head"
) -> ImportResult:
    """Write ``hf_dir`` in fairseq's XLM-R layout to the directory ``output`` (new or
    empty; its files appear only once all are written: :func:`..outputs.staged_dir`)."""
    if os.path.isfile(hf_dir):
        hint = (
            f" ({hf_dir} is a fairseq checkpoint? veco-export-hf --path {hf_dir} writes one as "
            "a Hugging Face directory)"
            if hf_dir.endswith(".pt")
            else ""
        )
        raise VecoUserError(
            f"{hf_dir} is a file: give the Hugging Face model directory (the one holding "
            f"{CONFIG_FILE}){hint}"
        )
    if not os.path.isdir(hf_dir):
        raise VecoUserError(f"{hf_dir}: no such directory")
    config = read_config(hf_dir)
    shape = encoder_shape(config, os.path.join(hf_dir, CONFIG_FILE))
    spm_path = os.path.join(hf_dir, SPM_FILE)
    if not os.path.isfile(spm_path):
        raise VecoUserError(
            f"{hf_dir}: no {SPM_FILE}: fairseq's XLM-R reads sentencepiece (a directory with "
            f"only {TOKENIZER_FILE} cannot be imported)"
        )
    symbols = spm_symbols(spm_path)
    tokenizer_json = os.path.join(hf_dir, TOKENIZER_FILE)
    if os.path.isfile(tokenizer_json):
        check_tokenizer_json(tokenizer_json, symbols)
    weights = weights_file(hf_dir)
    state, report = from_transformers(read_weights(weights), head_name)
    report.log(head_name)
    rows = int(state["encoder.sentence_encoder.embed_tokens.weight"].size(0))
    if not rows == shape.vocab == len(symbols):
        raise VecoUserError(
            f"{hf_dir}: the model has {rows} token embeddings (config vocab_size "
            f"{shape.vocab}) but {SPM_FILE} gives {len(symbols)} symbols "
            f"({len(symbols) - 5} pieces + <s> <pad> </s> <unk> <mask>): not this model's "
            "tokenizer"
        )
    if report.layers != shape.layers:
        raise VecoUserError(
            f"{hf_dir}: the weights have {report.layers} layers, {CONFIG_FILE} says "
            f"{shape.layers}"
        )
    config_path = os.path.join(hf_dir, CONFIG_FILE)
    pooler_dropout = probability(config, "classifier_dropout", config_path, shape.dropout)
    with staged_dir(output) as stage:
        with open(os.path.join(stage, DICT_FILE), "w", encoding="utf-8") as f:
            f.writelines(f"{s} 1\n" for s in symbols[len(SPECIALS) : -1])
        shutil.copyfile(spm_path, os.path.join(stage, SPM_FILE))
        cfg = fairseq_cfg(shape, os.path.abspath(output), pooler_dropout)
        cfg.task.data = stage  # the task reads dict.txt here; the checkpoint records output
        model = build_model(cfg, state, report, head_name)
        cfg.task.data = os.path.abspath(output)
        torch.save(checkpoint_state(cfg, model), os.path.join(stage, CHECKPOINT_FILE))
    return ImportResult(shape=shape, report=report, weights=weights, symbols=len(symbols))
