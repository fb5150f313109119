"""``translation_from_pretrained_veco``: a joined dictionary is required, and inference
iterators keep every sentence."""

import os

import pytest
from fairseq.data import LanguagePairDataset

from tests.helpers.nmt import dictionary_files, translation_task
from tests.helpers.toy import random_tokens
from veco_plugin.tasks.translation_from_pretrained_veco import (
    TranslationFromPretrainedVecoConfig,
    TranslationFromPretrainedVecoTask,
)


def test_task_requires_a_joined_dictionary(tmp_path):
    dictionary_files(tmp_path)
    os.link(tmp_path / "dict.txt", tmp_path / "dict.en.txt")
    other = tmp_path / "o"
    other.mkdir()
    dictionary_files(other, shuffle=True)
    os.link(other / "dict.txt", tmp_path / "dict.de.txt")
    cfg = TranslationFromPretrainedVecoConfig(
        data=str(tmp_path), source_lang="en", target_lang="de"
    )
    with pytest.raises(ValueError, match="differ.*--joined-dictionary --srcdict"):
        TranslationFromPretrainedVecoTask.setup_task(cfg)


def test_inference_iterators_keep_every_sentence(tmp_path):
    d = dictionary_files(tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    task = translation_task(data, str(tmp_path / "dict.txt"))
    sents = [random_tokens(d, 1, 4 + i % 3, seed=i)[0, 1:] for i in range(13)]
    sizes = [len(s) for s in sents]

    def dataset():
        return LanguagePairDataset(sents, sizes, d, sents, sizes, d)

    def count(ds):
        itr = task.get_batch_iterator(
            dataset=ds, max_tokens=4096, required_batch_size_multiple=8
        ).next_epoch_itr(shuffle=False)
        return sum(batch["nsentences"] for batch in itr)

    test = dataset()
    task.datasets["test"] = test
    assert count(test) == 13
    train = dataset()
    task.datasets[task.cfg.train_subset] = train
    assert count(train) == 8  # fairseq's rounding, kept for training only
    assert task.cfg.max_source_positions == task.cfg.max_target_positions == 512
