"""``veco_pretraining``: one monolingual and one bilingual batch per update.

Data layout (see README)::

    DATA/dict.txt                  the one shared dictionary
    DATA/mono/<lang>/<split>.*     fairseq-preprocess --only-source --srcdict DATA/dict.txt
    DATA/bi/<src>-<tgt>/<split>.<src>-<tgt>.<lang>.*
                                   fairseq-preprocess -s src -t tgt
                                       --srcdict/--tgtdict DATA/dict.txt

Sharded corpora follow fairseq's ``masked_lm``: ``DATA/shard0:DATA/shard1:...`` (each a
DATA as above, e.g. from ``veco-prepare-pretraining --shards N``); epoch e trains on
shard (e-1) mod N, the dictionary and the validation data come from the first. Every
shard is checked (languages, pairs, train split, the same ``dict.txt``) when data is
first loaded, before the first batch, not when training reaches it.
"""

import filecmp
import logging
import os
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import numpy as np
import torch
from fairseq import checkpoint_utils, utils
from fairseq.data import Dictionary, data_utils
from fairseq.dataclass import FairseqDataclass
from fairseq.tasks import FairseqTask, register_task
from omegaconf import II

from ..data.binarized import missing_split, splits_in
from ..data.dictionary import MASK, load_dictionary_with_mask
from ..data.language_mix import VecoConcatDataset, VecoResamplingDataset
from ..data.masking import MaskingScheme
from ..data.packing import RowCost, position_cost
from ..data.pair_dataset import VecoPairDataset
from ..data.token_languages import read_token_languages
from ..data.word_links import alignment_prefix, load_word_links
from ..data.zip_dataset import VecoZipDataset
from ..distributed.resume import VecoEpochBatchIterator
from ..errors import VecoUserError
from ..models.veco import load_xlmr_into_veco
from ..modules.language_embedding import TokenLanguageEmbedding
from .frozen_step import step_leaving_untouched

logger = logging.getLogger(__name__)


@dataclass
class VecoPretrainingConfig(FairseqDataclass):
    data: str = field(default="", metadata={"help": "DATA directory (dict.txt, mono/, bi/)"})
    mono_langs: str = field(default="", metadata={"help": "monolingual languages, e.g. en,de"})
    bi_pairs: str = field(default="", metadata={"help": "bilingual pairs, e.g. en-de,en-fr"})
    mono_mask_prob: float = field(default=0.15, metadata={"help": "masking rate, monolingual"})
    bi_mask_prob: float = field(default=0.25, metadata={"help": "masking rate, bilingual"})
    leave_unmasked_prob: float = field(default=0.1, metadata={"help": "masked tokens kept"})
    random_token_prob: float = field(default=0.1, metadata={"help": "masked tokens randomized"})
    max_mono_positions: int = field(
        default=512, metadata={"help": "max tokens of a monolingual segment (longer: truncated)"}
    )
    max_bi_positions: int = field(
        default=128, metadata={"help": "max tokens per side of a translation pair"}
    )
    multilang_sampling_alpha: float = field(
        default=0.5, metadata={"help": "language sampling smoothing exponent α (q ∝ p^α)"}
    )
    pretrained_xlmr: Optional[str] = field(
        default=None,
        metadata={"help": "fairseq XLM-R/RoBERTa model.pt to initialize all but cross-attention"},
    )
    token_languages: Optional[str] = field(
        default=None,
        metadata={
            "help": "'TOKEN LANG' lines: each token's language (one of --mono-langs) for a "
            "model with --language-embeddings; unlisted tokens and specials have none"
        },
    )
    pad_pairs: bool = field(
        default=False,
        metadata={
            "help": "one pair a row, padded to the batch's longest, for comparison (default: "
            "several pairs packed to a row, attention inside each pair; the same losses)"
        },
    )
    cross_attention_only_updates: int = field(
        default=0, metadata={"help": "train only the cross-attention for the first N updates"}
    )
    mono_max_tokens: Optional[int] = field(
        default=None,
        metadata={
            "help": "padded tokens of the monolingual sub-batch (default: its share of "
            "--max-tokens, which bounds the whole update)"
        },
    )
    bi_max_tokens: Optional[int] = field(
        default=None,
        metadata={
            "help": "padded tokens of the bilingual sub-batch, TLM concatenation included "
            "(default: its share of --max-tokens)"
        },
    )
    mono_batch_size: Optional[int] = field(
        default=None, metadata={"help": "pairs per monolingual sub-batch (default: --batch-size)"}
    )
    bi_batch_size: Optional[int] = field(
        default=None, metadata={"help": "pairs per bilingual sub-batch (default: --batch-size)"}
    )
    ddp_backend: str = II("distributed_training.ddp_backend")
    criterion: str = II("criterion._name")
    seed: int = II("common.seed")
    train_subset: str = II("dataset.train_subset")


def _split_list(text: str) -> List[str]:
    return [t for t in text.split(",") if t]


def _existing(directory: str) -> str:
    names = sorted(os.listdir(directory)) if os.path.isdir(directory) else []
    return ", ".join(names) if names else "nothing"


def check_flags(cfg: "VecoPretrainingConfig") -> None:
    """What can be checked without any data: probabilities and pair names."""
    for flag in ("mono_mask_prob", "bi_mask_prob"):
        if not 0.0 < getattr(cfg, flag) <= 1.0:
            raise VecoUserError(
                f"--{flag.replace('_', '-')} {getattr(cfg, flag)}: must be in (0, 1]"
            )
    for flag in ("leave_unmasked_prob", "random_token_prob"):
        if not 0.0 <= getattr(cfg, flag) <= 1.0:
            raise VecoUserError(
                f"--{flag.replace('_', '-')} {getattr(cfg, flag)}: must be in [0, 1]"
            )
    if cfg.leave_unmasked_prob + cfg.random_token_prob > 1.0:
        raise VecoUserError(
            "--leave-unmasked-prob + --random-token-prob exceed 1: "
            "both are shares of the masked tokens"
        )
    for pair in _split_list(cfg.bi_pairs):
        sides = pair.split("-")
        if len(sides) != 2 or not all(sides) or sides[0] == sides[1]:
            raise VecoUserError(
                f"--bi-pairs: {pair!r} is not SRC-TGT (two different languages, e.g. en-de)"
            )
    for flag, names in (("--mono-langs", cfg.mono_langs), ("--bi-pairs", cfg.bi_pairs)):
        listed = _split_list(names)
        twice = sorted({name for name in listed if listed.count(name) > 1})
        if twice:
            raise VecoUserError(
                f"{flag} {names}: {', '.join(twice)} given twice (each is one corpus; "
                "--multilang-sampling-alpha sets how often each is drawn)"
            )
    alpha = cfg.multilang_sampling_alpha
    if not 0.0 <= alpha <= 1.0:
        raise VecoUserError(
            f"--multilang-sampling-alpha {alpha}: the smoothing exponent of q ∝ p^α (VECO "
            "§4.1, XLM) is in [0, 1]: 0 draws every language equally, 1 as often as its data"
        )
    for flag, value in (
        ("--max-mono-positions", cfg.max_mono_positions),
        ("--max-bi-positions", cfg.max_bi_positions),
    ):
        if value < 3:
            raise VecoUserError(
                f"{flag} {value}: a segment is <s> pieces </s>: give at least 3 positions"
            )
    if cfg.cross_attention_only_updates < 0:
        raise VecoUserError(
            f"--cross-attention-only-updates {cfg.cross_attention_only_updates}: give a "
            "number of updates >= 0 (0: train everything from the start)"
        )
    for key in ("mono_max_tokens", "bi_max_tokens", "mono_batch_size", "bi_batch_size"):
        value = getattr(cfg, key)
        if value is not None and value < 1:
            unit = "tokens" if key.endswith("tokens") else "pairs"
            raise VecoUserError(
                f"--{key.replace('_', '-')} {value}: give a positive number of {unit} per "
                "sub-batch (or leave it out: its share of the batch)"
            )


def check_data_dirs(cfg: "VecoPretrainingConfig", data: str) -> None:
    """Every named language and pair has a directory in ``data`` (one DATA, or one
    shard of it; else: what exists instead).

    Checked when data is loaded (fairseq-train loads the validation split before the
    first batch), not when the task is set up: a checkpoint loads without its data."""
    for pair in _split_list(cfg.bi_pairs):
        sides = pair.split("-")
        directory = os.path.join(data, "bi", pair)
        if not os.path.isdir(directory):
            bi = os.path.join(data, "bi")
            reverse = os.path.join(bi, f"{sides[1]}-{sides[0]}")
            hint = (
                f"{reverse} exists: pass --bi-pairs {sides[1]}-{sides[0]}"
                if os.path.isdir(reverse)
                else f"{bi} holds {_existing(bi)}"
            )
            raise VecoUserError(f"--bi-pairs {pair}: no {directory}; {hint}")
    for lang in _split_list(cfg.mono_langs):
        directory = os.path.join(data, "mono", lang)
        if not os.path.isdir(directory):
            mono = os.path.join(data, "mono")
            raise VecoUserError(
                f"--mono-langs {lang}: no {directory} ({mono} holds {_existing(mono)}); "
                f"binarize it with fairseq-preprocess --only-source --srcdict {data}/dict.txt "
                f"--trainpref TEXT --destdir {directory}"
            )


def check_split(cfg: "VecoPretrainingConfig", split: str, data: str) -> None:
    """Every language and pair directory of ``data`` holds ``split`` (else: the splits
    it holds)."""
    flag = "--train-subset" if split == cfg.train_subset else "--valid-subset"
    directories = [os.path.join(data, "mono", lang) for lang in _split_list(cfg.mono_langs)]
    directories += [os.path.join(data, "bi", pair) for pair in _split_list(cfg.bi_pairs)]
    for directory in directories:
        if split not in splits_in(directory):
            fix = f"fairseq-preprocess --srcdict {data}/dict.txt --destdir {directory}"
            raise missing_split(flag, split, directory, fix)


def check_shards(cfg: "VecoPretrainingConfig", shards: List[str]) -> None:
    """Every shard holds every named language and pair with train data, and the first
    shard's ``dict.txt``: a shard that would fail in a later epoch fails now."""
    first = os.path.join(shards[0], "dict.txt")
    for shard in shards:
        check_data_dirs(cfg, shard)
        check_split(cfg, cfg.train_subset, shard)
        path = os.path.join(shard, "dict.txt")
        if shard != shards[0] and not (
            os.path.exists(path) and filecmp.cmp(first, path, shallow=False)
        ):
            state = "differs from" if os.path.exists(path) else "is missing; it must equal"
            raise VecoUserError(
                f"shard {shard}: {path} {state} {first}: every shard is binarized with the "
                f"one dictionary (fairseq-preprocess --srcdict {first})"
            )


def check_cross_attention_schedule(cfg: "VecoPretrainingConfig", criterion) -> None:
    """``--cross-attention-only-updates N`` trains the cross-attention alone for N
    updates: a criterion whose weighted terms never run it (no ``mono_ca``/``bi_ca``)
    would have nothing to train (an update without any gradient)."""
    weights = getattr(criterion, "weights", None)
    if not cfg.cross_attention_only_updates or weights is None:
        return
    if not (weights.get("mono_ca") or weights.get("bi_ca")):
        raise VecoUserError(
            f"--cross-attention-only-updates {cfg.cross_attention_only_updates} trains only "
            f"the cross-attention, which --criterion {cfg.criterion} never runs (no "
            "mono_ca/bi_ca term): drop the flag (it is VECO's schedule, for ca_mlm)"
        )


def check_model(cfg, model) -> None:
    """The task trains a veco encoder (``VecoModel``: two streams, the objectives' heads);
    any other ``--arch`` is refused naming what fits (was: ``'RobertaModel' object has no
    attribute 'sentence_encoder'``)."""
    from fairseq.models import ARCH_MODEL_REGISTRY

    from ..models.veco import VecoModel

    if not isinstance(model, VecoModel):
        archs = sorted(a for a, m in ARCH_MODEL_REGISTRY.items() if issubclass(m, VecoModel))
        raise VecoUserError(
            f"--arch {getattr(cfg, '_name', None) or getattr(cfg, 'arch', '?')} builds a "
            f"{type(model).__name__}: --task veco_pretraining trains a veco encoder, --arch "
            f"{' / '.join(archs)} (fairseq's own RoBERTa trains with --task masked_lm)"
        )


def check_criterion(cfg, criterion) -> None:
    """The task's batches (two sub-batches, masks drawn per update) are read by the
    plugin's pre-training objectives (``MaskedTermsCriterion``); any other ``--criterion``
    is refused naming them (was: ``KeyError: 'target'``)."""
    from fairseq.criterions import CRITERION_REGISTRY

    from ..criterions.masked_terms import MaskedTermsCriterion

    if not isinstance(criterion, MaskedTermsCriterion):
        names = sorted(
            n for n, c in CRITERION_REGISTRY.items() if issubclass(c, MaskedTermsCriterion)
        )
        raise VecoUserError(
            f"--criterion {getattr(cfg, '_name', '?')}: --task veco_pretraining's batches are "
            f"read by the plugin's objectives: give --criterion {' / '.join(names)}"
        )


def check_word_links(cfg: "VecoPretrainingConfig", readers, split: str, data: str) -> None:
    """Every pair of ``data`` has ``split``'s word alignments (``fairseq-preprocess
    --align-suffix``), which the criterion's terms ``readers`` read (WEAM's exchange
    matrix, eq. 5)."""
    for pair in _split_list(cfg.bi_pairs):
        src, tgt = pair.split("-")
        prefix = alignment_prefix(os.path.join(data, "bi", pair), split, src, tgt)
        if not all(os.path.exists(f"{prefix}.{ext}") for ext in ("bin", "idx")):
            raise VecoUserError(
                f"--criterion {cfg.criterion}: {', '.join(readers)} reads word alignments, and "
                f"{prefix}.{{bin,idx}} is missing: give scripts/prepare-pretraining-data.sh "
                "a TEXT/train.align Pharaoh file (or --align-with eflomal), or binarize with "
                "fairseq-preprocess --align-suffix"
            )


@register_task("veco_pretraining", dataclass=VecoPretrainingConfig)
class VecoPretrainingTask(FairseqTask):
    cfg: VecoPretrainingConfig

    def __init__(self, cfg: VecoPretrainingConfig, dictionary: Dictionary):
        super().__init__(cfg)
        self.dictionary = dictionary
        self.mask_idx = dictionary.index(MASK)
        self.mono_langs = _split_list(cfg.mono_langs)
        self.bi_pairs = _split_list(cfg.bi_pairs)
        self.shards = utils.split_paths(cfg.data)  # DATA, or DATA/shard0:DATA/shard1:...
        self._shards_checked = False
        self._warm_start = False  # the criterion's terms fail from random weights
        self._reads_links: Tuple[str, ...] = ()  # the criterion's terms reading word links
        self.row_cost = RowCost()  # what packing weighs rows by: set by build_model

    @classmethod
    def setup_task(cls, cfg: VecoPretrainingConfig, **kwargs):
        if not (_split_list(cfg.mono_langs) or _split_list(cfg.bi_pairs)):
            raise VecoUserError("veco_pretraining: give --mono-langs and/or --bi-pairs")
        if cfg.ddp_backend == "fully_sharded":
            raise VecoUserError(
                "--ddp-backend fully_sharded is not supported by veco_pretraining (fairscale's "
                "FSDP, untested here): use --ddp-backend pytorch_ddp (GPUs) or legacy_ddp"
            )
        check_flags(cfg)
        path = os.path.join(utils.split_paths(cfg.data)[0], "dict.txt")
        if not os.path.exists(path):
            raise VecoUserError(
                f"{path} not found: DATA must hold the shared dictionary "
                "(the pre-trained model's dict.txt)"
            )
        dictionary = load_dictionary_with_mask(path)
        logger.info("dictionary: %d types (with <mask>)", len(dictionary))
        return cls(cfg, dictionary)

    @property
    def source_dictionary(self):
        return self.dictionary

    @property
    def target_dictionary(self):
        return self.dictionary

    def max_positions(self):
        return max(self.cfg.max_mono_positions, 2 * self.cfg.max_bi_positions)

    # --- data -------------------------------------------------------------------------

    def _scheme(self, prob: float) -> MaskingScheme:
        return MaskingScheme(
            prob=prob,
            mask_idx=self.mask_idx,
            pad_idx=self.dictionary.pad(),
            first_ordinary=self.dictionary.nspecial,
            vocab_end=len(self.dictionary),
            random=self.cfg.random_token_prob,
            keep=self.cfg.leave_unmasked_prob,
        )

    def _load_side(self, directory: str, prefixes: List[str], fix: str, dict_name: str):
        shared = os.path.join(self.shards[0], "dict.txt")
        local = os.path.join(directory, dict_name)
        if os.path.exists(local) and not filecmp.cmp(shared, local, shallow=False):
            raise VecoUserError(f"{local} differs from {shared}: re-binarize with {fix}")
        for prefix in prefixes:
            dataset = data_utils.load_indexed_dataset(
                os.path.join(directory, prefix), self.dictionary
            )
            if dataset is not None:
                return dataset
        raise VecoUserError(
            f"no binarized data {os.path.join(directory, prefixes[0])}.{{bin,idx}}: run {fix}"
        )

    def _mono(self, data: str, lang: str, split: str, shuffle: bool) -> VecoPairDataset:
        directory = os.path.join(data, "mono", lang)
        corpus = self._load_side(
            directory,
            [split, f"{split}.{lang}-None.{lang}"],
            f"fairseq-preprocess --only-source --srcdict {self.shards[0]}/dict.txt "
            f"--{split if split in ('train', 'valid', 'test') else 'valid'}pref TEXT "
            f"--destdir {directory}",
            "dict.txt",
        )
        return VecoPairDataset.adjacent(
            corpus,
            name=f"mono/{lang}/{split}",
            bos=self.dictionary.bos(),
            max_len=self.cfg.max_mono_positions,
            scheme=self._scheme(self.cfg.mono_mask_prob),
            seed=self.cfg.seed,
            shuffle=shuffle,
            concat=False,
            pack=None if self.cfg.pad_pairs else self.row_cost,
        )

    def _bi(self, data: str, pair: str, split: str, shuffle: bool) -> VecoPairDataset:
        src, tgt = pair.split("-")
        directory = os.path.join(data, "bi", pair)
        shared = os.path.join(self.shards[0], "dict.txt")
        fix = (
            f"fairseq-preprocess --source-lang {src} --target-lang {tgt} --srcdict "
            f"{shared} --tgtdict {shared} --destdir {directory}"
        )
        sides = [
            self._load_side(directory, [f"{split}.{pair}.{lang}"], fix, f"dict.{lang}.txt")
            for lang in (src, tgt)
        ]
        if len(sides[0]) != len(sides[1]):
            raise VecoUserError(
                f"{directory}/{split}.{pair}.{{{src},{tgt}}} have {len(sides[0])} and "
                f"{len(sides[1])} lines: the raw text sides must be line-aligned (a stray "
                "carriage return inside a line is the usual cause: strip \\r and re-binarize)"
            )
        # DATA/bi/<pair>/<split>.align.<pair>.*: fairseq-preprocess --align-suffix (WEAM)
        links = load_word_links(directory, split, src, tgt, self.dictionary, sides)
        return VecoPairDataset.parallel(
            *sides,
            links=links,
            name=f"bi/{pair}/{split}",
            bos=self.dictionary.bos(),
            max_len=self.cfg.max_bi_positions,
            scheme=self._scheme(self.cfg.bi_mask_prob),
            seed=self.cfg.seed,
            shuffle=shuffle,
            pack=None if self.cfg.pad_pairs else self.row_cost,
        )

    def _mix(self, datasets: List[VecoPairDataset], train: bool, epoch: int):
        """Concatenate languages; in training resample them with q_l ∝ p_l^α."""
        if len(datasets) == 1:
            return datasets[0]
        if train:
            sizes = np.array([len(d) for d in datasets], dtype=float)
            p = sizes / sizes.sum()
            q = p**self.cfg.multilang_sampling_alpha
            q = q / q.sum()
            ratios = q * sizes.sum() / sizes
            logger.info(
                "language sampling (alpha=%s): %s",
                self.cfg.multilang_sampling_alpha,
                ", ".join(f"{d.name}={r:.3f}" for d, r in zip(datasets, q)),
            )
            datasets = [
                VecoResamplingDataset(
                    d, size_ratio=r, seed=self.cfg.seed, epoch=epoch, replace=r >= 1.0
                )
                for d, r in zip(datasets, ratios)
            ]
        return VecoConcatDataset(datasets)

    def _data_for(self, split: str, epoch: int) -> str:
        """The DATA (shard) ``split`` is read from at ``epoch``: training cycles through
        the shards, one per epoch; every other split comes from the first."""
        if not self._shards_checked:
            check_shards(self.cfg, self.shards)
            for shard in self.shards if self._reads_links else []:
                check_word_links(self.cfg, self._reads_links, self.cfg.train_subset, shard)
            self._shards_checked = True
        if split != self.cfg.train_subset or len(self.shards) == 1:
            return self.shards[0]
        index = (epoch - 1) % len(self.shards)
        logger.info(
            "epoch %d: %s reads shard %d of %d, %s",
            epoch,
            split,
            index,
            len(self.shards),
            self.shards[index],
        )
        return self.shards[index]

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        data = self._data_for(split, epoch)
        check_data_dirs(self.cfg, data)
        check_split(self.cfg, split, data)
        if self._reads_links:
            check_word_links(self.cfg, self._reads_links, split, data)
        train = split == self.cfg.train_subset  # shuffled and language-resampled
        parts = OrderedDict()
        if self.mono_langs:
            mono = [self._mono(data, lang, split, train) for lang in self.mono_langs]
            parts["mono"] = self._mix(mono, train, epoch)
        if self.bi_pairs:
            bi = [self._bi(data, pair, split, train) for pair in self.bi_pairs]
            parts["bi"] = self._mix(bi, train, epoch)
        self.datasets[split] = VecoZipDataset(
            parts,
            own_tokens={"mono": self.cfg.mono_max_tokens, "bi": self.cfg.bi_max_tokens},
            own_pairs={"mono": self.cfg.mono_batch_size, "bi": self.cfg.bi_batch_size},
            seed=self.cfg.seed,
        )
        self.datasets[split].set_epoch(epoch)

    def get_batch_iterator(self, dataset, *args, **kwargs):
        """fairseq's iterator, resumable on another number of processes.

        A training epoch gets an iterator of its own (its batches are drawn for the epoch):
        its DataLoader workers end with it. fairseq keeps them (``persistent_workers``) for
        an iterator it reuses; this one, dropped, kept them alive until a garbage
        collection, which then waited 5 s for each worker (in a checkpoint save, say)."""
        iterator = super().get_batch_iterator(dataset, *args, **kwargs)
        if not self.can_reuse_epoch_itr(dataset):
            iterator.persistent_workers = False
        return VecoEpochBatchIterator.adopt(iterator)

    def can_reuse_epoch_itr(self, dataset) -> bool:
        """Validation reads the same batches each time (fairseq gives it epoch 1): one
        iterator, and its DataLoader workers, for the whole run; a training epoch needs
        its own (languages are resampled and masks drawn per epoch)."""
        return dataset is not self.datasets.get(self.cfg.train_subset)

    # --- model and schedule -----------------------------------------------------------

    def build_model(self, cfg, from_checkpoint=False):
        """The model; one to train (not ``from_checkpoint``: a tool reading a checkpoint)
        gets ``--pretrained-xlmr``'s weights, then the parts its objective needs
        (XLM-Align's pointer network, WEAM's exchange head: ``VecoModel.fit_objective``,
        from the model's args). fairseq-train builds the model, then the criterion,
        then the optimizer, and loads checkpoints into it. Packing weighs rows by the
        model's size from here on (:func:`~veco_plugin.data.packing.position_cost`)."""
        model = super().build_model(cfg, from_checkpoint)
        if from_checkpoint:
            return model
        check_model(cfg, model)
        ffn = model.sentence_encoder.layers[0].fc1
        self.row_cost.position = position_cost(ffn.in_features, ffn.out_features)
        if self.cfg.pretrained_xlmr:
            path = self.cfg.pretrained_xlmr
            if not os.path.exists(path):
                raise VecoUserError(f"--pretrained-xlmr {path}: no such file")
            state = checkpoint_utils.load_checkpoint_to_cpu(path)["model"]
            load_xlmr_into_veco(model, state, f"--pretrained-xlmr {path}")
        self._set_token_languages(model)
        model.fit_objective()
        return model

    def _set_token_languages(self, model) -> None:
        """A model with ``--language-embeddings N`` gets ``--token-languages``' table
        (N must be the number of ``--mono-langs``); either flag alone is refused."""
        embed = model.sentence_encoder.embed_tokens
        path, langs = self.cfg.token_languages, _split_list(self.cfg.mono_langs)
        if not isinstance(embed, TokenLanguageEmbedding):
            if path:
                raise VecoUserError(
                    f"--token-languages {path}: the model has no language embeddings: "
                    f"add --language-embeddings {len(langs)}, or leave --token-languages out"
                )
            return
        if not path:
            raise VecoUserError(
                f"--language-embeddings {embed.count}: give --token-languages FILE "
                "('TOKEN LANG' lines: which token is of which language)"
            )
        if embed.count != len(langs):
            raise VecoUserError(
                f"--language-embeddings {embed.count}: --mono-langs {self.cfg.mono_langs} "
                f"names {len(langs)} languages: give --language-embeddings {len(langs)}"
            )
        embed.set_languages(read_token_languages(path, self.dictionary, langs))

    def build_criterion(self, cfg, from_checkpoint=False):
        criterion = super().build_criterion(cfg, from_checkpoint)
        if not from_checkpoint:
            check_criterion(cfg, criterion)
        check_cross_attention_schedule(self.cfg, criterion)
        self._warm_start = getattr(criterion, "needs_warm_start", False)
        self._reads_links = getattr(criterion, "reads_links", ())
        return criterion

    def begin_epoch(self, epoch, model):
        super().begin_epoch(epoch, model)
        if self._warm_start and not model.initialized_from_state:
            logger.warning(
                "!!! --criterion %s starts from RANDOM weights: its self-labelled alignments "
                "will be noise (XLM-Align needs a cold start). Start from a ca_mlm/tlm "
                "checkpoint (--restore-file CKPT --reset-optimizer --reset-dataloader "
                "--reset-meters --reset-lr-scheduler) or --pretrained-xlmr model.pt",
                self.cfg.criterion,
            )

    def _frozen(self, model, update_num: int) -> List[torch.nn.Parameter]:
        """Parameters held fixed at this update: all but the cross-attention during the
        first ``--cross-attention-only-updates`` updates (paper schedule), else none."""
        if update_num >= self.cfg.cross_attention_only_updates:
            return []
        cross = {id(p) for p in model.cross_attention_parameters()}
        return [p for p in model.parameters() if id(p) not in cross]

    def train_step(self, sample, model, criterion, optimizer, update_num, ignore_grad=False):
        """Paper schedule: first train only the cross-attention, then everything.

        Frozen parameters compute no gradient (``requires_grad`` is off during the
        forward/backward only: fairseq's optimizers index parameters by it)."""
        frozen = self._frozen(model, update_num)
        for p in frozen:
            p.requires_grad_(False)
        try:
            return super().train_step(sample, model, criterion, optimizer, update_num, ignore_grad)
        finally:
            for p in frozen:
                p.requires_grad_(True)

    def optimizer_step(self, optimizer, model, update_num):
        frozen = self._frozen(model, update_num)
        if frozen:
            step_leaving_untouched(optimizer, frozen)
        else:
            super().optimizer_step(optimizer, model, update_num)
