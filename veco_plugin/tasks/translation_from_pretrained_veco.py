"""``translation_from_pretrained_veco``: fine-tune a VECO-initialized Transformer.

fairseq's ``translation`` task with the pre-training vocabulary: one joined
dictionary (``dict.<src>.txt`` == ``dict.<tgt>.txt`` == the pre-trained ``dict.txt``)
with ``<mask>`` appended exactly as ``veco_pretraining`` does, so token ids and
embedding rows of the checkpoint line up. Binarize with::

    fairseq-preprocess -s en -t de --joined-dictionary --srcdict PRETRAINED/dict.txt \\
        --trainpref ... --destdir DATA

(or with the reduced dictionary written by ``veco-reduce-vocab``).

Inputs as in pre-training (``--input-format veco``, the default). Pre-training encodes
every segment as ``<s> x </s>`` (``VecoPairDataset``), the H stream over x and the S
stream over ``<s> y </s>``, each with positions from 0. fairseq's translation feeds
the encoder ``x </s>`` (every token one learned position earlier than in pre-training)
and the decoder ``</s> y`` (y_i at position i, as in the S stream, but a first token
that pre-training only ever saw at the end). Here the encoder reads ``<s> x </s>``
(``load_langpair_dataset(prepend_bos_src=<s>)``; ``fairseq-interactive`` sources too)
and the decoder starts with ``<s>``: its input ``<s> y`` is then the S stream's input
without its final ``</s>``, token for token and position for position. The targets are
unchanged (``y </s>``), so a hypothesis never contains ``<s>``. The decoder start is
applied to every batch in ``train_step``, ``valid_step`` and ``inference_step`` (the
latter passes ``bos_token=<s>`` to fairseq's ``SequenceGenerator``), i.e. in
fairseq-train (with ``--eval-bleu``), fairseq-validate, fairseq-generate and
fairseq-interactive alike. ``--input-format fairseq`` restores fairseq's convention
(models fine-tuned before this option existed were trained with it: pass it to
fairseq-generate for them).

Wrong input ends in one line naming the file or flag (``VecoUserError``): a missing
DATA directory or dictionary, a subset that is not binarized (the ones that are, listed),
and a pre-training (encoder-only ``veco``) model or checkpoint where an encoder-decoder
is needed (convert it with ``veco-init-nmt``).

Inference subsets are translated completely: fairseq rounds every batch down to a
multiple of ``--required-batch-size-multiple`` (default 8) and drops the rest, so
fairseq-generate would silently skip up to 7 test sentences. Only the training
subset keeps the multiple; every other iterator uses 1.
"""

import inspect
import os
from dataclasses import dataclass, field
from typing import Any, Dict

import torch
from fairseq import utils
from fairseq.data import data_utils
from fairseq.dataclass import ChoiceEnum
from fairseq.models import ARCH_MODEL_REGISTRY, FairseqEncoderDecoderModel
from fairseq.tasks import register_task
from fairseq.tasks.translation import (
    TranslationConfig,
    TranslationTask,
    load_langpair_dataset,
)

from ..data.binarized import missing_split, splits_in
from ..data.dictionary import load_dictionary_with_mask
from ..errors import VecoUserError

INPUT_FORMATS = ChoiceEnum(["veco", "fairseq"])


@dataclass
class TranslationFromPretrainedVecoConfig(TranslationConfig):
    max_source_positions: int = field(
        default=512, metadata={"help": "max source tokens (the pre-trained positions)"}
    )
    max_target_positions: int = field(
        default=512, metadata={"help": "max target tokens (the pre-trained positions)"}
    )
    # fairseq declares choice fields with a ChoiceEnum value as the type
    input_format: INPUT_FORMATS = field(  # type: ignore[valid-type]
        default="veco",
        metadata={
            "help": "veco: encoder input <s> x </s> and decoder input <s> y, as in "
            "pre-training; fairseq: x </s> and </s> y (fairseq's translation; models "
            "fine-tuned before this option existed)"
        },
    )


def start_decoder_with(sample: Dict[str, Any], bos: int, eos: int) -> Dict[str, Any]:
    """``sample`` with ``</s>`` -> ``bos`` in ``prev_output_tokens`` (B, T).

    fairseq's collater moves the target's final ``</s>`` to the front; it is the only
    ``</s>`` there, so the decoder input ``</s> y`` becomes ``bos y``. Returns a new
    dict (the caller's batch is not modified); samples without a decoder input pass.
    """
    net_input = sample.get("net_input") if sample else None
    if not net_input or net_input.get("prev_output_tokens") is None:
        return sample
    prev = net_input["prev_output_tokens"]
    net_input = dict(net_input, prev_output_tokens=prev.masked_fill(prev.eq(eos), bos))
    return dict(sample, net_input=net_input)


def check_encoder_decoder(cfg: Any, from_checkpoint: bool) -> None:
    """Refuse a model config whose arch is not an encoder-decoder (``veco``)."""
    arch = utils.safe_getattr(cfg, "arch", None) or utils.safe_getattr(cfg, "_name", None)
    model = ARCH_MODEL_REGISTRY.get(arch)
    if model is None or issubclass(model, FairseqEncoderDecoderModel):
        return
    if from_checkpoint:
        raise VecoUserError(
            f"the checkpoint holds a {arch} model, a pre-training encoder without a decoder: "
            "convert it with veco-init-nmt --pretrained CKPT --output INIT.pt, fine-tune "
            "INIT.pt, and translate with the fine-tuned checkpoint"
        )
    raise VecoUserError(
        f"--arch {arch} is a pre-training encoder, not an encoder-decoder: fine-tune a "
        "veco_transformer_* (veco-init-nmt prints the flags)"
    )


@register_task("translation_from_pretrained_veco", dataclass=TranslationFromPretrainedVecoConfig)
class TranslationFromPretrainedVecoTask(TranslationTask):
    """Translation with the pre-trained joined dictionary + ``<mask>`` and the
    pre-training input format (see the module docstring)."""

    cfg: TranslationFromPretrainedVecoConfig

    @classmethod
    def load_dictionary(cls, filename):
        """The pre-training dictionary: ``filename`` + ``<mask>`` (veco_pretraining)."""
        if not os.path.isfile(filename):
            raise VecoUserError(
                f"{filename} not found: binarize DATA with fairseq-preprocess -s SRC -t TGT "
                "--joined-dictionary --srcdict <pretrained dict.txt>"
            )
        return load_dictionary_with_mask(filename)

    @classmethod
    def setup_task(cls, cfg: TranslationFromPretrainedVecoConfig, **kwargs):
        data = utils.split_paths(cfg.data)[0] if cfg.data else ""
        if not os.path.isdir(data):
            raise VecoUserError(f"DATA {data!r}: no such directory (fairseq-preprocess --destdir)")
        if cfg.source_lang is None or cfg.target_lang is None:
            cfg.source_lang, cfg.target_lang = data_utils.infer_language_pair(data)
            if cfg.source_lang is None or cfg.target_lang is None:
                raise VecoUserError(
                    f"{data}: cannot tell the languages (no SPLIT.SRC-TGT.* files): "
                    "pass -s SRC -t TGT"
                )
        task = super().setup_task(cfg, **kwargs)
        if task.src_dict != task.tgt_dict:
            raise VecoUserError(
                f"{data}/dict.{cfg.source_lang}.txt and dict.{cfg.target_lang}.txt differ: "
                "the pre-trained model has one joined dictionary; binarize with "
                "fairseq-preprocess --joined-dictionary --srcdict <pretrained dict.txt> "
                "(or the dict.txt of veco-reduce-vocab)"
            )
        return task

    @property
    def veco_inputs(self) -> bool:
        return self.cfg.input_format == "veco"

    def build_model(self, cfg, from_checkpoint=False):
        check_encoder_decoder(cfg, from_checkpoint)
        return super().build_model(cfg, from_checkpoint)

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        """fairseq's language-pair data; with ``--input-format veco`` every source is
        ``<s> x </s>`` (``prepend_bos_src``), the targets stay ``y </s>``."""
        data = utils.split_paths(self.cfg.data)[0]
        if split not in splits_in(data):
            train = split == self.cfg.train_subset
            flag = "--train-subset" if train else "--valid-subset/--gen-subset"
            fix = f"fairseq-preprocess --joined-dictionary --srcdict {data}/dict.SRC.txt"
            raise missing_split(flag, split, data, fix)
        if not self.veco_inputs:
            return super().load_dataset(split, epoch=epoch, combine=combine, **kwargs)
        paths = utils.split_paths(self.cfg.data)
        paths = paths if split == self.cfg.train_subset else paths[:1]
        cfg = self.cfg
        self.datasets[split] = load_langpair_dataset(
            paths[(epoch - 1) % len(paths)], split,
            cfg.source_lang, self.src_dict, cfg.target_lang, self.tgt_dict,
            combine=combine, dataset_impl=cfg.dataset_impl,
            upsample_primary=cfg.upsample_primary,
            left_pad_source=cfg.left_pad_source, left_pad_target=cfg.left_pad_target,
            max_source_positions=cfg.max_source_positions,
            max_target_positions=cfg.max_target_positions,
            load_alignments=cfg.load_alignments, truncate_source=cfg.truncate_source,
            num_buckets=cfg.num_batch_buckets, shuffle=(split != "test"),
            pad_to_multiple=cfg.required_seq_len_multiple,
            prepend_bos_src=self.src_dict.bos(),
        )  # fmt: skip

    def build_dataset_for_inference(self, src_tokens, src_lengths, constraints=None):
        """fairseq-interactive's sources (``x </s>``) -> ``<s> x </s>`` (veco inputs)."""
        if self.veco_inputs:
            bos = self.src_dict.bos()
            src_tokens = [torch.cat([t.new_full((1,), bos), t]) for t in src_tokens]
            src_lengths = [t.numel() for t in src_tokens]
        return super().build_dataset_for_inference(src_tokens, src_lengths, constraints)

    def _decoder_input(self, sample):
        if not self.veco_inputs:
            return sample
        return start_decoder_with(sample, self.tgt_dict.bos(), self.tgt_dict.eos())

    def train_step(self, sample, model, criterion, optimizer, update_num, ignore_grad=False):
        sample = self._decoder_input(sample)
        return super().train_step(sample, model, criterion, optimizer, update_num, ignore_grad)

    def valid_step(self, sample, model, criterion):
        return super().valid_step(self._decoder_input(sample), model, criterion)

    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        """Beam search (or scoring) with the decoder started by ``<s>`` (veco inputs)."""
        if not self.veco_inputs:
            return super().inference_step(generator, models, sample, prefix_tokens, constraints)
        with torch.no_grad():
            return generator.generate(
                models,
                self._decoder_input(sample),
                prefix_tokens=prefix_tokens,
                constraints=constraints,
                bos_token=self.tgt_dict.bos(),
            )

    def get_batch_iterator(self, dataset, *args, **kwargs):
        """fairseq's iterator; batch-size rounding only for the training subset."""
        if dataset is not self.datasets.get(self.cfg.train_subset):
            bound = inspect.signature(super().get_batch_iterator).bind(dataset, *args, **kwargs)
            bound.arguments["required_batch_size_multiple"] = 1
            return super().get_batch_iterator(*bound.args, **bound.kwargs)
        return super().get_batch_iterator(dataset, *args, **kwargs)
