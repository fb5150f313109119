"""``translation_from_pretrained_veco``: fine-tune a VECO-initialized Transformer.

fairseq's ``translation`` task with the pre-training vocabulary: one joined
dictionary (``dict.<src>.txt`` == ``dict.<tgt>.txt`` == the pre-trained ``dict.txt``)
with ``<mask>`` appended exactly as ``veco_pretraining`` does, so token ids and
embedding rows of the checkpoint line up. Binarize with::

    fairseq-preprocess -s en -t de --joined-dictionary --srcdict PRETRAINED/dict.txt \\
        --trainpref ... --destdir DATA

(or with the reduced dictionary written by ``veco-reduce-vocab``).

Inference subsets are translated completely: fairseq rounds every batch down to a
multiple of ``--required-batch-size-multiple`` (default 8) and drops the rest, so
fairseq-generate would silently skip up to 7 test sentences. Only the training
subset keeps the multiple; every other iterator uses 1.
"""

import inspect
import os
from dataclasses import dataclass, field

from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask

from ..data.dictionary import load_dictionary_with_mask


@dataclass
class TranslationFromPretrainedVecoConfig(TranslationConfig):
    max_source_positions: int = field(
        default=512, metadata={"help": "max source tokens (the pre-trained positions)"}
    )
    max_target_positions: int = field(
        default=512, metadata={"help": "max target tokens (the pre-trained positions)"}
    )


@register_task("translation_from_pretrained_veco", dataclass=TranslationFromPretrainedVecoConfig)
class TranslationFromPretrainedVecoTask(TranslationTask):
    """Translation with the pre-trained joined dictionary + ``<mask>``."""

    cfg: TranslationFromPretrainedVecoConfig

    @classmethod
    def load_dictionary(cls, filename):
        """The pre-training dictionary: ``filename`` + ``<mask>`` (veco_pretraining)."""
        return load_dictionary_with_mask(filename)

    @classmethod
    def setup_task(cls, cfg: TranslationFromPretrainedVecoConfig, **kwargs):
        task = super().setup_task(cfg, **kwargs)
        if task.src_dict != task.tgt_dict:
            data = cfg.data.split(os.pathsep)[0]
            raise ValueError(
                f"{data}/dict.{cfg.source_lang}.txt and dict.{cfg.target_lang}.txt differ: "
                "the pre-trained model has one joined dictionary; binarize with "
                "fairseq-preprocess --joined-dictionary --srcdict <pretrained dict.txt> "
                "(or the dict.txt of veco-reduce-vocab)"
            )
        return task

    def get_batch_iterator(self, dataset, *args, **kwargs):
        """fairseq's iterator; batch-size rounding only for the training subset."""
        if dataset is not self.datasets.get(self.cfg.train_subset):
            bound = inspect.signature(super().get_batch_iterator).bind(dataset, *args, **kwargs)
            bound.arguments["required_batch_size_multiple"] = 1
            return super().get_batch_iterator(*bound.args, **bound.kwargs)
        return super().get_batch_iterator(dataset, *args, **kwargs)
