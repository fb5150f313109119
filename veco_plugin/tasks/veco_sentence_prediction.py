"""``veco_sentence_prediction``: fairseq's ``sentence_prediction`` with VECO's plug-out
and plug-in fine-tuning (paper §3.1, Table 2).

DATA is fairseq's layout (``veco-prepare-sentence-prediction`` writes it)::

    DATA/input0/{split}.{bin,idx} dict.txt   first sentences (x)
    DATA/input1/...                          second sentences, for pairs (optional)
    DATA/label/{split}.{bin,idx} dict.txt    labels
    DATA/trans0/, DATA/trans1/               translations of input0/input1, line-aligned
                                             (plug-in; optional per split)

``--plug-mode out``: XLM-R fine-tuning, the head reads H^L at ``<s>``.
``--plug-mode in``: each example x comes with its translation y; the head reads
``[H^L_x ; S^L_x]`` for x and ``[H^L_y ; S^L_y]`` for y, both labelled with x's label.
A split without ``trans0`` is read plug-out (a warning; see
``models/veco_sentence_classifier.py`` for what the plug-in head reads then).

As fairseq's RoBERTa fine-tuning, the LM head is unused (and, plug-out, the
cross-attention): with ``pytorch_ddp`` add ``--find-unused-parameters`` (without it the
task refuses to start, in one line, where torch would crash at the second update). The
head runs inside the model's forward, so DDP sees every parameter that is used.

::

    fairseq-train DATA --user-dir veco_plugin --task veco_sentence_prediction \
        --plug-mode in --criterion veco_sentence_prediction --num-classes 2 \
        --init-token 0 --separator-token 2 --max-positions 512 --shorten-method truncate \
        --arch veco_base --restore-file ca_mlm/checkpoint_best.pt --reset-optimizer \
        --reset-dataloader --reset-meters --best-checkpoint-metric x_accuracy \
        --maximize-best-checkpoint-metric ...
"""

import logging
import os
from dataclasses import dataclass, field

from fairseq.data import ConcatSentencesDataset, PrependTokenDataset, data_utils
from fairseq.data.shorten_dataset import maybe_shorten_dataset
from fairseq.dataclass import ChoiceEnum
from fairseq.tasks import register_task
from fairseq.tasks.sentence_prediction import SentencePredictionConfig, SentencePredictionTask

from ..criterions.masked_terms import DdpSettings, refuse_idle_parameters
from ..data.translated_dataset import VecoTranslatedDataset
from ..models.veco import build_veco
from ..models.veco_sentence_classifier import VecoSentenceClassifier
from ..optim.no_decay import mark_no_decay
from .fine_tuning import VecoFineTuningConfig, training_order

logger = logging.getLogger(__name__)

PLUG_MODES = ChoiceEnum(["out", "in"])
TRANSLATION_KEYS = ("trans0", "trans1")  # translations of input0, input1


@dataclass
class VecoSentencePredictionConfig(SentencePredictionConfig, DdpSettings, VecoFineTuningConfig):
    plug_mode: PLUG_MODES = field(  # type: ignore[valid-type]
        default="out",
        metadata={
            "help": "out: the head reads H^L (XLM-R fine-tuning); in: pairs (x, "
            "translation y), the head reads [H^L ; S^L] of both (paper §3.1)"
        },
    )


@register_task("veco_sentence_prediction", dataclass=VecoSentencePredictionConfig)
class VecoSentencePredictionTask(SentencePredictionTask):
    cfg: VecoSentencePredictionConfig

    def load_dataset(self, split, combine=False, **kwargs):
        """fairseq's examples (one shuffle by ``--seed``), with their translations plug-in;
        the training split's drawn at random each epoch with ``--random-batches``."""
        dataset = super().load_dataset(split, combine=combine, **kwargs)
        if self.cfg.plug_mode == "in":
            dataset = self._with_translations(split, combine, dataset)
        self.datasets[split] = training_order(self.cfg, split, dataset)
        return self.datasets[split]

    def _with_translations(self, split: str, combine: bool, dataset):
        translation = self._translation_tokens(split, combine)
        if translation is None:
            logger.warning(
                "%s: no %s/%s: plug-in falls back to plug-out for this split",
                split,
                os.path.join(self.cfg.data, TRANSLATION_KEYS[0]),
                split,
            )
            return dataset
        return VecoTranslatedDataset(dataset, translation, self.source_dictionary.pad())

    def _translation_tokens(self, split: str, combine: bool):
        """trans0 [+ separator + trans1], built as the parent builds input0/input1."""
        parts = []
        for key in TRANSLATION_KEYS:
            path = os.path.join(self.cfg.data, key, split)
            if not os.path.exists(path + ".bin"):
                break
            parts.append(
                data_utils.load_indexed_dataset(path, self.source_dictionary, combine=combine)
            )
        if not parts:
            return None
        first = parts[0]
        if self.cfg.init_token is not None:
            first = PrependTokenDataset(first, self.cfg.init_token)
        tokens = first
        if len(parts) > 1:
            second = parts[1]
            if self.cfg.separator_token is not None:
                second = PrependTokenDataset(second, self.cfg.separator_token)
            tokens = ConcatSentencesDataset(first, second)
        return maybe_shorten_dataset(
            tokens,
            split,
            self.cfg.shorten_data_split_list,
            self.cfg.shorten_method,
            self.max_positions(),
            self.cfg.seed,
        )

    def build_criterion(self, cfg, from_checkpoint=False):
        """fairseq's, refused up front where torch's DDP would crash at the second update:
        the classifier never uses its LM head (nor, plug-out, the cross-attention)."""
        idle = "the LM head" + (" and the cross-attention" if self.cfg.plug_mode == "out" else "")
        refuse_idle_parameters(self.cfg, "--task veco_sentence_prediction", idle)
        return super().build_criterion(cfg, from_checkpoint)

    def build_model(self, cfg, from_checkpoint=False):
        """A ``veco`` arch as :class:`VecoSentenceClassifier` with the head of
        ``--plug-mode``."""
        base = build_veco(cfg, self, from_checkpoint, "--task veco_sentence_prediction")
        model = VecoSentenceClassifier(base.args, base.encoder)
        model.register_classification_head(
            self.cfg.classification_head_name,
            num_classes=self.cfg.num_classes,
            plug_in=self.cfg.plug_mode == "in",
        )
        mark_no_decay(model)  # for veco_adamw --no-decay-bias-and-norm
        return model
