"""Fine-tuning inputs look like pre-training inputs (``--input-format veco``).

Pre-training encodes every segment as ``<s> x </s>`` (``VecoPairDataset``): the H
stream over x, the S stream over ``<s> y </s>``, positions from 0. Checked here on
data binarized as fairseq-preprocess writes it (``x </s>`` per line), through the
task's own loaders, the interactive path and beam search:

* the encoder reads ``<s> x </s>``; the decoder reads ``<s> y`` (the S stream's input
  without its final ``</s>``); the targets stay ``y </s>``;
* generation starts from ``<s>``: beam search's scores are the teacher-forced scores
  of ``<s> hyp`` and not those of ``</s> hyp``;
* ``--input-format fairseq`` is fairseq's ``x </s>`` / ``</s> y``.
"""

import os

import pytest
import torch
from fairseq.data import Dictionary, data_utils, indexed_dataset
from fairseq.sequence_generator import SequenceGenerator

from tests.helpers.toy import ToyTask, model_args, random_tokens
from veco_plugin.models.veco_transformer import VecoTransformerModel
from veco_plugin.tasks.translation_from_pretrained_veco import (
    TranslationFromPretrainedVecoConfig,
    TranslationFromPretrainedVecoTask,
)

N_WORDS = 30


def _binarize(path, lines, vocab):
    builder = indexed_dataset.make_builder(f"{path}.bin", impl="mmap", vocab_size=vocab)
    for line in lines:
        builder.add_item(line)
    builder.finalize(f"{path}.idx")


@pytest.fixture
def pairs(tmp_path):
    """DATA/{dict.en.txt,dict.de.txt,train.en-de.{en,de}} and the lines (x </s>, y </s>)."""
    d = Dictionary()
    for i in range(N_WORDS):
        d.add_symbol(f"w{i}")
    d.save(str(tmp_path / "dict.txt"))
    for lang in ("en", "de"):
        os.link(tmp_path / "dict.txt", tmp_path / f"dict.{lang}.txt")
    d.add_symbol("<mask>")
    src = [random_tokens(d, 1, 3 + i % 4, seed=i)[0, 1:] for i in range(6)]  # x </s>
    tgt = [random_tokens(d, 1, 3 + i % 3, seed=50 + i)[0, 1:] for i in range(6)]  # y </s>
    for lang, lines in (("en", src), ("de", tgt)):
        _binarize(tmp_path / f"train.en-de.{lang}", lines, len(d))
    return tmp_path, d, src, tgt


def _task(data, input_format="veco"):
    cfg = TranslationFromPretrainedVecoConfig(
        data=str(data), source_lang="en", target_lang="de", input_format=input_format,
        train_subset="train", dataset_impl="mmap", required_seq_len_multiple=1,
    )  # fmt: skip
    return TranslationFromPretrainedVecoTask.setup_task(cfg)


def _batch(task, n):
    task.load_dataset("train")
    dataset = task.dataset("train")
    batch = dataset.collater([dataset[i] for i in range(n)])
    return task._decoder_input(batch)


def _rows(tokens, pad):
    return [row[row.ne(pad)].tolist() for row in tokens]


@pytest.mark.parametrize("input_format", ["veco", "fairseq"])
def test_training_batches(pairs, input_format):
    data, d, src, tgt = pairs
    batch = _batch(_task(data, input_format), len(src))
    order = batch["id"].tolist()
    bos, eos, pad = d.bos(), d.eos(), d.pad()
    start = [bos] if input_format == "veco" else []
    first = bos if input_format == "veco" else eos
    assert _rows(batch["net_input"]["src_tokens"], pad) == [start + src[i].tolist() for i in order]
    assert _rows(batch["target"], pad) == [tgt[i].tolist() for i in order]
    prev = _rows(batch["net_input"]["prev_output_tokens"], pad)
    assert prev == [[first] + tgt[i].tolist()[:-1] for i in order]
    assert batch["net_input"]["src_lengths"].tolist() == [len(start) + len(src[i]) for i in order]


def test_pretraining_layout_of_the_same_line(pairs):
    """The encoder and decoder inputs are the pre-training sides ``<s> x </s>``,
    ``<s> y </s>`` (VecoPairDataset), the decoder's without its final ``</s>``."""
    from veco_plugin.data.masking import MaskingScheme
    from veco_plugin.data.pair_dataset import VecoPairDataset

    data, d, src, tgt = pairs
    batch = _batch(_task(data), len(src))
    keep_all = MaskingScheme(
        prob=0.0, mask_idx=len(d) - 1, pad_idx=d.pad(), first_ordinary=d.nspecial,
        vocab_end=len(d), random=0.0, keep=1.0,
    )  # fmt: skip
    sides = [data_utils.load_indexed_dataset(str(data / f"train.en-de.{lang}"), d)
             for lang in ("en", "de")]  # fmt: skip
    pretraining = VecoPairDataset.parallel(
        *sides, name="t", bos=d.bos(), max_len=64, scheme=keep_all, shuffle=False
    )
    assert list(pretraining.first_index) == list(range(len(src)))  # nothing skipped
    rows = {"x": [], "y": []}
    for i in batch["id"].tolist():
        rows["x"].append(pretraining[i]["x"].tolist())
        rows["y"].append(pretraining[i]["y"].tolist()[:-1])
    assert _rows(batch["net_input"]["src_tokens"], d.pad()) == rows["x"]
    assert _rows(batch["net_input"]["prev_output_tokens"], d.pad()) == rows["y"]


def test_interactive_sources_get_bos(pairs):
    data, d, src, _ = pairs
    task = _task(data)
    dataset = task.build_dataset_for_inference([src[0]], [len(src[0])])
    assert dataset[0]["source"].tolist() == [d.bos()] + src[0].tolist()
    assert dataset.src_sizes.tolist() == [len(src[0]) + 1]
    plain = _task(data, "fairseq").build_dataset_for_inference([src[0]], [len(src[0])])
    assert plain[0]["source"].tolist() == src[0].tolist()


def _teacher_forced(model, batch, hyp, start):
    prev = torch.tensor([[start] + hyp[:-1]])
    with torch.no_grad():
        out = model(
            batch["net_input"]["src_tokens"][:1], batch["net_input"]["src_lengths"][:1], prev
        )
        lprobs = model.get_normalized_probs(out, log_probs=True)[0]
    return lprobs.gather(-1, torch.tensor(hyp).unsqueeze(-1)).squeeze(-1)


def test_beam_search_starts_from_bos(pairs):
    data, d, _, _ = pairs
    task = _task(data)
    torch.manual_seed(3)
    args = model_args("veco_transformer_tiny", max_source_positions=64, max_target_positions=64)
    model = VecoTransformerModel.build_model(args, ToyTask(task.src_dict)).eval()
    batch = _batch(task, 2)
    generator = SequenceGenerator([model], task.tgt_dict, beam_size=1, max_len_b=6)
    hypo = task.inference_step(generator, [model], batch)[0][0]
    hyp = hypo["tokens"].tolist()  # (an untrained model: any tokens)
    scores = hypo["positional_scores"]
    assert torch.allclose(scores, _teacher_forced(model, batch, hyp, d.bos()), atol=1e-5)
    assert not torch.allclose(scores, _teacher_forced(model, batch, hyp, d.eos()), atol=1e-3)
