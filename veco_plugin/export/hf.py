"""Write a fairseq RoBERTa/XLM-R/veco encoder as a Hugging Face XLM-R directory.

The directory holds ``config.json`` and the weights of ``XLMRobertaForMaskedLM`` (the
plug-out encoder and its tied LM head; ``XLMRobertaModel.from_pretrained`` reads the same
weights, its pooler starts random as for any masked-LM checkpoint), and the sentencepiece
tokenizer (``sentencepiece.bpe.model`` rewritten by :mod:`.tokenizer`, plus
``tokenizer.json`` for the fast tokenizer, the only one of transformers 5) giving fairseq's
ids.

``transformers`` is the ``hf`` extra: imported here only, inside the functions.
"""

import os
from dataclasses import dataclass
from typing import Any, Dict, Tuple

from fairseq.data import Dictionary
from fairseq.models.roberta import RobertaModel
from fairseq.modules import LearnedPositionalEmbedding

from ..checkpoints.config import cfg_value
from ..errors import VecoUserError
from .keymap import ExportReport, to_transformers
from .tokenizer import aligned_model, fast_tokenizer, parse_model

SPM_FILE = "sentencepiece.bpe.model"  # the name transformers' XLM-R tokenizer looks for
TOKENIZER_FILE = "tokenizer.json"  # the tokenizers library's (fast tokenizer) file

# fairseq --activation-fn -> transformers hidden_act (same function)
ACTIVATIONS = {"gelu": "gelu", "gelu_accurate": "gelu_new", "gelu_fast": "gelu_new", "relu": "relu"}


def require_transformers() -> Any:
    """The ``transformers`` module, or a one-line error naming the extra."""
    try:
        import transformers
    except ImportError:
        raise VecoUserError(
            "exporting needs transformers, which is not installed: pip install "
            "'veco_plugin[hf]' (or pip install transformers)"
        ) from None
    return transformers


@dataclass
class EncoderShape:
    """What ``XLMRobertaConfig`` needs of a fairseq encoder."""

    vocab: int
    dim: int
    layers: int
    heads: int
    ffn: int
    positions: int  # rows of the position table: max_positions + padding_idx + 1
    activation: str
    eps: float
    dropout: float
    attention_dropout: float


def encoder_shape(model: RobertaModel) -> EncoderShape:
    """Read the sizes off the modules; refuse what XLM-R cannot express (pre-LN, scaled or
    sinusoidal embeddings, no embedding layer norm, quantization noise)."""
    encoder = model.encoder.sentence_encoder
    layers = list(encoder.layers)
    if encoder.layer_norm is not None or any(layer.normalize_before for layer in layers):
        raise VecoUserError("a pre-LN encoder (--encoder-normalize-before): XLM-R is post-LN")
    if encoder.layernorm_embedding is None:
        raise VecoUserError("no embedding layer norm (--layernorm-embedding): XLM-R has one")
    if float(encoder.embed_scale) != 1.0:
        raise VecoUserError("scaled token embeddings (no --no-scale-embedding): XLM-R has none")
    if not isinstance(encoder.embed_positions, LearnedPositionalEmbedding):
        raise VecoUserError("positions are not learned embeddings: XLM-R learns them")
    if encoder.quant_noise is not None or layers[0].quant_noise:
        raise VecoUserError("quantization noise (--quant-noise-pq) has no XLM-R counterpart")
    name = str(cfg_value(model.args, "activation_fn", "gelu"))
    if name not in ACTIVATIONS:
        raise VecoUserError(f"--activation-fn {name}: one of {', '.join(ACTIVATIONS)} exports")
    return EncoderShape(
        vocab=encoder.embed_tokens.num_embeddings,
        dim=encoder.embed_tokens.embedding_dim,
        layers=len(layers),
        heads=layers[0].self_attn.num_heads,
        ffn=layers[0].fc1.out_features,
        positions=encoder.embed_positions.num_embeddings,
        activation=ACTIVATIONS[name],
        eps=float(layers[0].self_attn_layer_norm.eps),
        dropout=float(cfg_value(model.args, "dropout", 0.1)),
        attention_dropout=float(cfg_value(model.args, "attention_dropout", 0.1)),
    )


def xlmr_config(shape: EncoderShape, dictionary: Dictionary) -> Dict[str, Any]:
    """``XLMRobertaConfig`` keyword arguments of ``shape``."""
    return dict(
        vocab_size=shape.vocab,
        hidden_size=shape.dim,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        intermediate_size=shape.ffn,
        hidden_act=shape.activation,
        hidden_dropout_prob=shape.dropout,
        attention_probs_dropout_prob=shape.attention_dropout,
        max_position_embeddings=shape.positions,
        type_vocab_size=1,
        layer_norm_eps=shape.eps,
        bos_token_id=dictionary.bos(),
        pad_token_id=dictionary.pad(),
        eos_token_id=dictionary.eos(),
        architectures=["XLMRobertaForMaskedLM"],
    )


def read_spm_model(spm_model: str) -> bytes:
    """The bytes of ``--spm-model``, refused when missing or not a sentencepiece model."""
    if os.path.isdir(spm_model):
        raise VecoUserError(f"--spm-model {spm_model} is a directory: give the model file")
    if not os.path.isfile(spm_model):
        raise VecoUserError(f"--spm-model {spm_model}: no such file")
    with open(spm_model, "rb") as f:
        proto = f.read()
    try:
        parse_model(proto)
    except VecoUserError as exc:
        raise VecoUserError(
            f"--spm-model {spm_model}: {exc}: give the sentencepiece model the checkpoint was "
            "trained with"
        ) from None
    return proto


def aligned_tokenizer(spm_model: str, dictionary: Dictionary) -> bytes:
    """``--spm-model`` rewritten for ``dictionary`` (:func:`.tokenizer.aligned_model`)."""
    try:
        proto, counts = aligned_model(read_spm_model(spm_model), dictionary.symbols)
    except VecoUserError as exc:
        if str(exc).startswith("--spm-model"):
            raise
        raise VecoUserError(f"--spm-model {spm_model}: {exc}") from None
    if counts["pieces"] + 2 != len(dictionary):  # + <pad> + <mask>
        raise VecoUserError(
            f"{counts['pieces']} pieces + <pad> + <mask> but {len(dictionary)} dictionary symbols"
        )
    return proto


def write_tokenizer(proto: bytes, dictionary: Dictionary, output: str, max_length: int) -> None:
    """The aligned sentencepiece model ``proto`` (:func:`aligned_tokenizer`),
    ``tokenizer.json`` built from it by :mod:`.tokenizer` (not by transformers: 5.x would
    save its empty default vocabulary) and transformers' tokenizer config in ``output``;
    then reread with ``AutoTokenizer``, which must give the dictionary's symbols at their
    fairseq ids."""
    transformers = require_transformers()
    vocab_file = os.path.join(output, SPM_FILE)
    with open(vocab_file, "wb") as f:
        f.write(proto)
    tokenizer_file = os.path.join(output, TOKENIZER_FILE)
    fast_tokenizer(proto, dictionary.symbols).save(tokenizer_file)
    # 4.x: the fast class (its config also names the sentencepiece one); 5.x: an alias of
    # XLMRobertaTokenizer, which loads tokenizer_file over its default vocabulary
    tokenizer = transformers.XLMRobertaTokenizerFast(
        vocab_file=vocab_file, tokenizer_file=tokenizer_file, model_max_length=max_length
    )
    tokenizer.save_pretrained(output)
    saved = transformers.AutoTokenizer.from_pretrained(output)
    check_tokenizer(saved, dictionary, transformers.__version__)


def check_tokenizer(tokenizer: Any, dictionary: Dictionary, version: str) -> None:
    """Refuse a saved tokenizer whose vocabulary ids are not ``dictionary``'s (a transformers
    ``version`` that reads the files otherwise)."""
    ids = tokenizer.convert_tokens_to_ids(dictionary.symbols)  # fairseq id = list index
    wrong = [(i, j) for i, j in enumerate(ids) if i != j]
    if wrong:
        i, j = wrong[0]
        raise VecoUserError(
            f"transformers {version} reads the exported tokenizer with other ids than fairseq's: "
            f"{len(wrong)} symbols, e.g. {dictionary[i]!r} (fairseq {i}, transformers {j})"
        )


def export_model(
    model: RobertaModel, dictionary: Dictionary, spm_model: str, output: str
) -> Tuple[ExportReport, Dict[str, Any]]:
    """Write ``model`` (its plug-out encoder and LM head), its config and its tokenizer to
    the directory ``output`` (created); everything that can be refused is refused before
    the first file is written.

    Returns:
        the key report and the config written.
    """
    transformers = require_transformers()
    shape = encoder_shape(model)
    if shape.vocab != len(dictionary):
        raise VecoUserError(
            f"the dictionary has {len(dictionary)} symbols but the model {shape.vocab} rows"
        )
    proto = aligned_tokenizer(spm_model, dictionary)
    state, report = to_transformers(model.state_dict())
    report.log()
    config = xlmr_config(shape, dictionary)
    hf_model = transformers.XLMRobertaForMaskedLM(transformers.XLMRobertaConfig(**config))
    hf_model.load_state_dict(state, strict=True)
    os.makedirs(output, exist_ok=True)
    hf_model.save_pretrained(output)
    padding = model.encoder.sentence_encoder.padding_idx
    write_tokenizer(proto, dictionary, output, max_length=shape.positions - padding - 1)
    return report, config
