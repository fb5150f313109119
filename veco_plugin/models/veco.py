"""``veco``: an XLM-R-layout encoder whose layers carry a pluggable cross-attention.

State-dict layout is RoBERTa/XLM-R's (``encoder.sentence_encoder.*``,
``encoder.lm_head.*``) plus ``layers.N.cross_attn.*`` and
``layers.N.cross_attn_layer_norm.*``, so a fairseq XLM-R checkpoint loads with only
the cross-attention missing.
"""

import contextlib
import logging
from typing import Dict, Optional, Tuple

import torch
import torch.nn.functional as F
from fairseq import models as fairseq_models
from fairseq.criterions import CRITERION_REGISTRY
from fairseq.models import register_model, register_model_architecture
from fairseq.models.roberta import RobertaEncoder, RobertaModel
from fairseq.models.roberta.model import base_architecture as roberta_base_architecture
from fairseq.modules.transformer_sentence_encoder import init_bert_params
from fairseq.utils import safe_getattr, safe_hasattr
from omegaconf import OmegaConf, open_dict
from torch import Tensor

from ..errors import VecoUserError
from ..modules.activations import activation
from ..modules.fused_cross_entropy import linear_cross_entropy
from ..modules.language_embedding import TokenLanguageEmbedding
from ..modules.pair_layout import reset_positions, selected, swap_halves
from ..modules.pointer_network import VecoPointerNetwork
from ..modules.veco_transformer_encoder import VecoTransformerEncoder
from ..modules.word_exchange import VecoWordExchangeHead, exchange
from .flag_checks import check_model_flags
from .requests import (
    Embed,
    EmbedOutput,
    Exchange,
    Output,
    PlugOut,
    PlugOutOutput,
    Pointer,
    PointerOutput,
    Request,
    Scores,
    SelfLabel,
    SelfLabelOutput,
    TwoStream,
    TwoStreamOutput,
)

logger = logging.getLogger(__name__)


class VecoEncoder(RobertaEncoder):
    """RoBERTa encoder (embeddings, layers, tied LM head) built from VECO layers; the
    LM head's GELU without fairseq's fp32 detour (:mod:`..modules.activations`)."""

    def build_embedding(self, vocab_size, embedding_dim, padding_idx):
        count = safe_getattr(self.args, "language_embeddings", 0) or 0
        if count:
            return TokenLanguageEmbedding(vocab_size, embedding_dim, padding_idx, count)
        return super().build_embedding(vocab_size, embedding_dim, padding_idx)

    def build_encoder(self, args, dictionary, embed_tokens):
        encoder = VecoTransformerEncoder(args, dictionary, embed_tokens)
        encoder.apply(init_bert_params)
        return encoder

    def build_lm_head(self, embed_dim, output_dim, activation_fn, weight):
        head = super().build_lm_head(embed_dim, output_dim, activation_fn, weight)
        head.activation_fn = activation(activation_fn)  # the GELU without the fp32 detour
        return head


@register_model("veco")
class VecoModel(RobertaModel):
    """One entry point, ``forward``, for every objective: fairseq's data-parallel
    wrappers (``pytorch_ddp``, ``legacy_ddp``, ...) only see and synchronize what
    passes through it, so a criterion calls the model exactly once per step.

    * ``model(src_tokens, ...)``: RoBERTa's forward (plug-out), unchanged.
    * ``model(requests={name: request, ...})``: all a training step needs, in one
      call; returns ``{name: output}``. The request types and their outputs are in
      :mod:`veco_plugin.models.requests` (``PlugOut``, ``SelfLabel``, ``TwoStream``,
      ``Embed``).
    """

    def __init__(self, args, encoder):
        super().__init__(args, encoder)
        self.pointer: Optional[VecoPointerNetwork] = None
        self.exchange: Optional[VecoWordExchangeHead] = None
        self.initialized_from_state = False  # set by load_state_dict (checkpoint, XLM-R)

    @staticmethod
    def add_args(parser):
        RobertaModel.add_args(parser)
        # read by fairseq's TransformerConfig, but fairseq's RoBERTa gives them no flag
        parser.add_argument(
            "--checkpoint-activations",
            action="store_true",
            help="recompute every layer (both streams) in the backward: less memory",
        )
        parser.add_argument(
            "--offload-activations",
            action="store_true",
            help="with --checkpoint-activations: keep the saved layer inputs on the CPU",
        )
        parser.add_argument(
            "--compile-layers",
            action="store_true",
            help="torch.compile every encoder layer (both streams): fewer, larger kernels; "
            "the first update of a new shape compiles (a minute or two), a second shape "
            "compiles for every shape; the weights and checkpoints are the same",
        )
        parser.add_argument(
            "--fused-lm-loss",
            action="store_true",
            help="the LM head's vocabulary projection and cross-entropy in one step, a "
            "chunk of masked positions at a time: the (masked x vocabulary) logits are "
            "never held whole (the same losses and gradients)",
        )
        parser.add_argument(
            "--language-embeddings",
            type=int,
            metavar="N",
            help="XLM's language embeddings for languages that share no token: N learned "
            "vectors, each token's language's added to its embedding (veco_pretraining's "
            "--token-languages says which token is which) [0: none]",
        )

    @classmethod
    def build_model(cls, args, task):
        veco_base_architecture(args)
        if not safe_hasattr(args, "max_positions"):
            args.max_positions = task.max_positions()
        check_model_flags(args, ("encoder",), task.max_positions())
        return cls(args, VecoEncoder(args, task.source_dictionary))

    @property
    def sentence_encoder(self) -> VecoTransformerEncoder:
        return self.encoder.sentence_encoder

    def forward(
        self,
        src_tokens: Optional[Tensor] = None,
        features_only: bool = False,
        return_all_hiddens: bool = False,
        classification_head_name: Optional[str] = None,
        requests: Optional[Dict[str, Request]] = None,
        **kwargs,
    ):
        if requests is None:
            return super().forward(
                src_tokens, features_only, return_all_hiddens, classification_head_name, **kwargs
            )
        return {name: self._serve(request) for name, request in requests.items()}

    def _serve(self, request: Request) -> Output:
        if isinstance(request, PlugOut):
            return self._plug_out(request)
        if isinstance(request, TwoStream):
            return self._two_stream(request)
        if isinstance(request, SelfLabel):
            return self._self_label(request)
        if isinstance(request, Embed):
            return EmbedOutput(self.sentence_encoder.embed_tokens(request.ids))
        raise TypeError(f"not a veco request: {type(request).__name__}")

    def _logits(self, features: Tensor, masked: Tensor, count: Optional[int]) -> Tensor:
        """LM head on ``features`` (B, T, C) at ``masked`` (B, T) -> (M, V): the M rows
        gathered without a host sync when ``count`` (= M, :data:`~.requests.MASKED_COUNT`)
        is given; else by fairseq's head, which indexes by the mask (a sync)."""
        if count is None:
            return self.encoder.output_layer(features, masked)
        return self.encoder.lm_head(selected(features, masked, count))

    def _head(
        self, features: Tensor, masked: Tensor, count: Optional[int], target: Optional[Tensor]
    ) -> Tuple[Optional[Tensor], Optional[Scores]]:
        """The LM head at ``masked``: (logits, None), or with ``--fused-lm-loss`` and the
        gold ``target`` (B, T) given, (None, scores) from the fused projection and
        cross-entropy (:mod:`~veco_plugin.modules.fused_cross_entropy`; no (M, V) logits)."""
        if not (getattr(self.args, "fused_lm_loss", False) and target is not None):
            return self._logits(features, masked, count), None
        if count is None:
            count = int(masked.sum())  # a sync, as fairseq's head's indexing
        head = self.encoder.lm_head
        x = head.layer_norm(head.activation_fn(head.dense(selected(features, masked, count))))
        gold = selected(target, masked, count)
        return None, linear_cross_entropy(x, head.weight, head.bias, gold)

    def _positions(self, request) -> Optional[Tensor]:
        """Explicit positions of a ``PlugOut`` / ``SelfLabel``: a packing's, or XLM's
        restart at the second segment; None: fairseq's running positions."""
        if request.packing is not None:
            return request.packing.positions
        if request.first_lengths is not None:
            padding_idx = self.sentence_encoder.padding_idx
            return reset_positions(request.tokens, request.first_lengths, padding_idx)
        return None

    def _plug_out(self, request: PlugOut) -> PlugOutOutput:
        encoder = self.sentence_encoder
        tokens, pointer, packing = request.tokens, request.pointer, request.packing
        keep = tuple(request.layers) + ((pointer.layer,) if pointer else ())
        last, kept = encoder.forward_stream(
            tokens,
            positions=self._positions(request),
            keep_layers=keep,
            padded=request.padded,
            segments=packing.segments if packing else None,
        )
        hidden = {k: v.transpose(0, 1) for k, v in kept.items()}
        last = last.transpose(0, 1)  # (B, T, C)
        logits = scores = None
        if request.masked is not None:
            target = None if request.exchange else request.target  # WEAM reads the logits
            logits, scores = self._head(last, request.masked, request.masked_count, target)
        return PlugOutOutput(
            hidden={k: hidden[k] for k in request.layers},
            logits=logits,
            scores=scores,
            pointer=self._point(tokens, hidden[pointer.layer], pointer) if pointer else None,
            exchange_logits=(
                self._exchange(last, request.exchange, logits) if request.exchange else None
            ),
        )

    def _exchange(self, last: Tensor, request: Exchange, logits: Optional[Tensor]) -> Tensor:
        """WEAM eqs. 5-8 on ``last`` (B, T, C) = H^L of the concatenated pair, at the M
        masked positions of ``logits`` (M, V) (the MLM head's, which learned M on the
        host: the rows here are selected without another sync) -> (M, V)."""
        if self.exchange is None:
            raise ValueError("this veco model has no word-exchange head (build_extension)")
        if logits is None:
            raise ValueError("an Exchange request needs the masked positions' logits (masked)")
        x, y = request.halves.gather(last)  # (B, W, C) each
        read = torch.stack(exchange(x, y, request.links))  # eq. 5, (2, B, W, C)
        features = self.exchange(selected(read, request.select, logits.size(0)))  # (M, C)
        head = self.encoder.lm_head  # eq. 8: linear(.) . e_k with the tied embeddings
        return F.linear(head.layer_norm(features), head.weight) + head.bias

    def _point(self, tokens: Tensor, hidden: Tensor, request: Pointer) -> PointerOutput:
        if self.pointer is None:
            raise ValueError("this veco model has no pointer network (build_extension)")
        d = self.encoder.dictionary
        x_real, y_real = request.halves.pieces(tokens, d.pad(), d.bos(), d.eos())
        x, y = request.halves.gather(hidden)  # (B, W, C) each
        forward, backward = self.pointer(x, y, x_real, y_real)
        return PointerOutput(forward, backward, x_real, y_real)

    def _self_label(self, request: SelfLabel) -> SelfLabelOutput:
        encoder = self.sentence_encoder
        tokens, layer, packing = request.tokens, request.layer, request.packing
        training = self.training
        self.train(False)
        try:
            with torch.no_grad():
                _, kept = encoder.forward_stream(
                    tokens,
                    positions=self._positions(request),
                    keep_layers=(layer,),
                    segments=packing.segments if packing else None,
                )
        finally:
            self.train(training)
        return SelfLabelOutput(kept[layer].transpose(0, 1))

    def _two_stream(self, request: TwoStream) -> TwoStreamOutput:
        encoder = self.sentence_encoder
        tokens, masked, stop_gradient = request.tokens, request.masked, request.stop_gradient
        packing = request.packing
        positions = packing.positions if packing else None
        segments = packing.segments if packing else None
        need_h_grad = request.need_h or request.features or not stop_gradient
        # Without H outputs and with the stop-gradient, nothing back-propagates into H.
        with torch.set_grad_enabled(torch.is_grad_enabled() and need_h_grad):
            h, _ = encoder.forward_stream(
                tokens, positions=positions, padded=request.padded, segments=segments
            )  # (T, 2B, C)
        h_logits = s_logits = h_scores = s_scores = s = None
        if request.need_h and masked is not None:
            h_logits, h_scores = self._head(
                h.transpose(0, 1), masked, request.masked_count, request.target
            )
        if request.need_s or request.features:
            # S_x attends to H^L_y and S_y to H^L_x: swap the two halves of the batch.
            memory = swap_halves(h.detach() if stop_gradient else h, dim=1)
            memory_padding_mask = memory_segments = None
            if segments is not None:  # each pair's segment has the same number in both rows
                memory_segments = swap_halves(segments, dim=0)
            elif request.padded:
                memory_padding_mask = swap_halves(tokens.eq(encoder.padding_idx), dim=0)
            s, _ = encoder.forward_stream(
                tokens,
                memory,
                memory_padding_mask,
                positions=positions,
                padded=request.padded,
                segments=segments,
                memory_segments=memory_segments,
            )
            if request.need_s and masked is not None:
                s_logits, s_scores = self._head(
                    s.transpose(0, 1), masked, request.masked_count, request.target
                )
        features = request.features
        return TwoStreamOutput(
            h_logits=h_logits,
            s_logits=s_logits,
            h_scores=h_scores,
            s_scores=s_scores,
            h=h.transpose(0, 1) if features else None,
            s=s.transpose(0, 1) if features and s is not None else None,
        )

    def cross_attention_parameters(self):
        return self.sentence_encoder.cross_attention_parameters()

    def fit_objective(self) -> None:
        """Build the parts the objective named in this model's args needs, after checking
        the model against its terms: ``--criterion`` (``args.criterion``; its settings are
        in ``args`` too, fairseq's whole namespace) is looked up in fairseq's criterion
        registry, and a criterion with a ``fit_model`` (every term recipe,
        ``MaskedTermsCriterion``) says which (``VecoTerm.extensions``); others need none.

        ``veco_pretraining`` calls it when it builds a model to train (not one read from
        a checkpoint by a tool), before the criterion, the optimizer and the
        data-parallel wrappers exist."""
        criterion = CRITERION_REGISTRY.get(safe_getattr(self.args, "criterion", None))
        fit = getattr(criterion, "fit_model", None)
        if fit is not None:
            fit(self.args, self)

    def build_extension(self, name: str) -> None:
        """Add a part some objectives need, as fairseq's RoBERTa adds classification
        heads (``<name>.*`` in the state dict; a no-op when present): ``pointer``,
        XLM-Align's pointer network (``bi_dwa``), or ``exchange``, WEAM's eqs. 6-7
        (``bi_cp``). ``fit_objective`` builds those of the model's objective."""
        if getattr(self, name) is None:
            module = EXTENSIONS[name](self.args.encoder_embed_dim)
            module.apply(init_bert_params)
            setattr(self, name, module)

    def load_state_dict(self, state_dict, strict=True, model_cfg=None, args=None):
        self.initialized_from_state = True
        return super().load_state_dict(state_dict, strict, model_cfg, args)

    def upgrade_state_dict_named(self, state_dict, name):
        """RoBERTa's upgrade, then the extensions: a state without one (a
        ``ca_mlm``/``tlm``/XLM-R checkpoint starting ``dwa``) keeps this model's fresh
        one; a model without one drops the state's (a ``dwa`` checkpoint read by
        another objective, or by a tool: ``fit_objective`` builds parts for training
        only)."""
        super().upgrade_state_dict_named(state_dict, name)
        prefix = name + "." if name else ""
        for extension in EXTENSIONS:
            mine = getattr(self, extension)
            theirs = [k for k in state_dict if k.startswith(f"{prefix}{extension}.")]
            what = EXTENSION_NAMES[extension]
            if mine is None and theirs:
                logger.info("dropping the checkpoint's %s (%d tensors)", what, len(theirs))
                for k in theirs:
                    del state_dict[k]
            elif mine is not None and not theirs:
                logger.info("the %s starts random (not in the checkpoint)", what)
                for k, v in mine.state_dict().items():
                    state_dict[f"{prefix}{extension}.{k}"] = v


# parts some objectives add to the model (``build_extension``): name -> module(C)
EXTENSIONS = {"pointer": VecoPointerNetwork, "exchange": VecoWordExchangeHead}
EXTENSION_NAMES = {"pointer": "pointer network", "exchange": "word-exchange head"}  # for logs


# (layers, hidden, FFN, heads) per size name; veco_transformer archs use the same table.
ARCH_SIZES = {
    "tiny": (2, 64, 256, 4),  # CPU tests
    "small": (6, 768, 3072, 12),  # paper Table 8
    "base": (12, 768, 3072, 12),  # XLM-R base
    "large": (24, 1024, 4096, 16),  # paper Table 8
}


def fill_encoder_sizes(args, size: str) -> None:
    """Default the encoder sizes of ``size``; values the user passed are kept."""
    layers, dim, ffn, heads = ARCH_SIZES[size]
    args.encoder_layers = safe_getattr(args, "encoder_layers", layers)
    args.encoder_embed_dim = safe_getattr(args, "encoder_embed_dim", dim)
    args.encoder_ffn_embed_dim = safe_getattr(args, "encoder_ffn_embed_dim", ffn)
    args.encoder_attention_heads = safe_getattr(args, "encoder_attention_heads", heads)


def veco_base_architecture(args):
    """XLM-R base: 12 layers, 768 hidden, 3072 FFN, 12 heads, post-LN, GELU; no
    language embeddings."""
    args.language_embeddings = safe_getattr(args, "language_embeddings", 0) or 0
    roberta_base_architecture(args)


@register_model_architecture("veco", "veco_base")
def veco_base(args):
    veco_base_architecture(args)


@register_model_architecture("veco", "veco_tiny")
def veco_tiny(args):
    fill_encoder_sizes(args, "tiny")
    veco_base_architecture(args)


@register_model_architecture("veco", "veco_small")
def veco_small(args):
    fill_encoder_sizes(args, "small")
    veco_base_architecture(args)


@register_model_architecture("veco", "veco_large")
def veco_large(args):
    fill_encoder_sizes(args, "large")
    veco_base_architecture(args)


_EXTENSION_PREFIXES = tuple(f"{name}." for name in EXTENSIONS)

# Keys of a fairseq XLM-R/RoBERTa state dict that VECO does not have a use for.
_XLMR_EXTRA_PREFIXES = ("classification_heads.",)


def upgrade_pretrained_state(model: VecoModel, state: Dict[str, Tensor]) -> Dict[str, Tensor]:
    """``state`` in the current layout, by fairseq's own ``upgrade_state_dict`` (the
    released XLM-R/RoBERTa ``model.pt``: ``decoder.sentence_encoder.*``,
    ``decoder.lm_head.*``, ``emb_layer_norm``, fused attention in-projections).

    ``model`` only supplies the module tree that the upgrade walks; the copy that is
    returned is what both ``--pretrained-xlmr`` and ``veco-init-nmt`` read."""
    state = dict(state)
    model.upgrade_state_dict(state)
    return state


def load_xlmr_into_veco(model: VecoModel, state: Dict[str, Tensor], source: str) -> None:
    """Copy every XLM-R/RoBERTa weight into ``model``; only cross-attention stays random.

    Old key layouts are upgraded first; fails on a vocabulary or shape mismatch and
    on unexpected keys."""
    state = upgrade_pretrained_state(model, state)
    own = model.state_dict()
    extra = [
        k
        for k in state
        if k not in own and not k.startswith(_XLMR_EXTRA_PREFIXES) and not k.endswith("version")
    ]
    if extra:
        raise VecoUserError(
            f"{source}: {len(extra)} keys have no place in a veco model (e.g. {extra[0]}): "
            "is it a fairseq RoBERTa/XLM-R checkpoint of the same layer count?"
        )
    emb = "encoder.sentence_encoder.embed_tokens.weight"
    if emb not in state:
        raise VecoUserError(f"{source}: no {emb}: not a fairseq RoBERTa/XLM-R checkpoint")
    if state[emb].shape != own[emb].shape:
        raise VecoUserError(
            f"{source}: embeddings {tuple(state[emb].shape)} but the task dictionary gives "
            f"{tuple(own[emb].shape)}: binarize with the checkpoint's dict.txt "
            "(fairseq-preprocess --srcdict CKPT_DIR/dict.txt) and the same --arch sizes"
        )
    for k, v in state.items():
        if k in own and own[k].shape != v.shape:
            raise VecoUserError(
                f"{source}: {k} has shape {tuple(v.shape)}, the --arch gives "
                f"{tuple(own[k].shape)}: pick the arch matching the checkpoint"
            )
    missing, _ = model.load_state_dict({k: v for k, v in state.items() if k in own}, strict=False)
    random_modules = sorted({k.rsplit(".", 1)[0] for k in missing})
    bad = [k for k in missing if ".cross_attn" not in k and not k.startswith(_EXTENSION_PREFIXES)]
    if bad:
        raise VecoUserError(f"{source}: missing non-cross-attention weights, e.g. {bad[0]}")
    logger.info(
        "initialized veco from %s; %d modules start random (cross-attention): %s",
        source,
        len(random_modules),
        ", ".join(random_modules[:4]) + (" ..." if len(random_modules) > 4 else ""),
    )


def build_veco(cfg, task, from_checkpoint: bool, who: str) -> VecoModel:
    """The ``veco`` model of ``cfg`` that a fine-tuning ``task`` builds its model on (the
    task's ``--max-positions``); another ``--arch`` is refused in one line naming ``who``."""
    with open_dict(cfg) if OmegaConf.is_config(cfg) else contextlib.ExitStack():
        cfg.max_positions = task.cfg.max_positions
    base = fairseq_models.build_model(cfg, task, from_checkpoint)
    if type(base) is not VecoModel:
        raise VecoUserError(
            f"{who} needs a veco --arch (veco_tiny, veco_base, ...), got {type(base).__name__}"
        )
    return base
