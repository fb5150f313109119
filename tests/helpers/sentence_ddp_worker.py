"""One rank of the data-parallel check of ``veco_sentence_prediction``
(run by test_sentence_prediction_data_parallel.py).

Usage: python -m tests.helpers.sentence_ddp_worker RANK WORLD PORT OUT

On every rank, per ``--plug-mode`` (``out``, ``in``) and backend (``pytorch_ddp`` with
``find_unused_parameters=True``, ``legacy_ddp``): the same toy classifier, wrapped as
fairseq wraps it, one forward and backward of the criterion on this rank's examples
(``EXAMPLES_PER_RANK`` of them, from ``rank * EXAMPLES_PER_RANK``). Then, per mode, two
steps under ``pytorch_ddp`` without ``find_unused_parameters``. OUT gets
``{"grads": {(backend, mode): {name: grad}}, "errors": {mode: what torch raised}}``.
"""

import sys
from types import SimpleNamespace
from typing import Dict

import numpy as np
import torch
import torch.distributed as dist
from fairseq.data import (
    IdDataset,
    ListDataset,
    NestedDictionaryDataset,
    NumelDataset,
    NumSamplesDataset,
    RawLabelDataset,
    RightPadDataset,
)

from tests.helpers.ddp_worker import wrap
from tests.helpers.toy import build, toy_dictionary
from veco_plugin.data.translated_dataset import VecoTranslatedDataset
from veco_plugin.models.veco_sentence_classifier import VecoSentenceClassifier
from veco_plugin.objectives import build_criterion

HEAD = "sentence_classification_head"
CLASSES = 3
EXAMPLES_PER_RANK = 3
MODES = ("out", "in")
BACKENDS = ("pytorch_ddp", "legacy_ddp")


def classifier(d, plug_in: bool) -> VecoSentenceClassifier:
    """What the task builds from ``veco_tiny`` (dropout off: ranks and the reference
    compute the same function)."""
    base = build("veco_tiny", d, seed=0, pooler_dropout=0.0)
    model = VecoSentenceClassifier(base.args, base.encoder)
    model.register_classification_head(HEAD, num_classes=CLASSES, plug_in=plug_in)
    return model.train()


def criterion():
    labels = toy_dictionary(0)
    for i in range(CLASSES):
        labels.add_symbol(str(i))
    return build_criterion("veco_sentence_prediction", SimpleNamespace(label_dictionary=labels))


def _examples(d, n: int):
    """The first ``n`` of a fixed sequence of (x, translation y, label): sentences are
    ``<s> w ... </s>`` of 3-10 random words (drawn one after another, so the first
    examples do not depend on ``n``)."""
    rng = np.random.default_rng(0)

    def sentence():
        words = rng.integers(d.nspecial, len(d) - 1, rng.integers(3, 11))
        return torch.tensor([d.bos(), *words, d.eos()])

    return [(sentence(), sentence(), int(rng.integers(CLASSES))) for _ in range(n)]


def batch(d, plug_in: bool, first: int, count: int) -> Dict:
    """Examples ``first .. first+count-1``, collated as the task's datasets collate them
    (plug-in: with their translations)."""
    xs, ys, labels = zip(*_examples(d, first + count))
    tokens = ListDataset(list(xs))
    dataset = NestedDictionaryDataset(
        {
            "id": IdDataset(),
            "net_input": {
                "src_tokens": RightPadDataset(tokens, d.pad()),
                "src_lengths": NumelDataset(tokens, reduce=False),
            },
            "nsentences": NumSamplesDataset(),
            "ntokens": NumelDataset(tokens, reduce=True),
            "target": RawLabelDataset(list(labels)),
        },
        sizes=[np.array([len(x) for x in xs])],
    )
    if plug_in:
        translations = ListDataset(list(ys), np.array([len(y) for y in ys]))
        dataset = VecoTranslatedDataset(dataset, translations, d.pad())
    return dataset.collater([dataset[i] for i in range(first, first + count)])


def gradients(model, wrapped, sample) -> Dict[str, torch.Tensor]:
    """The criterion's loss on ``sample`` through ``wrapped``, backpropagated (and
    synchronized, as fairseq's optimizer does for ``legacy_ddp``); ``model``'s gradients."""
    loss, _, _ = criterion()(wrapped, sample)
    loss.backward()
    if hasattr(wrapped, "all_reduce_grads"):
        wrapped.all_reduce_grads()
    return {n: p.grad for n, p in model.named_parameters() if p.grad is not None}


def ddp_error(model, sample) -> str:
    """What ``pytorch_ddp`` without ``find_unused_parameters`` raises within two steps
    ("" if nothing)."""
    wrapped = wrap(model, "pytorch_ddp", False)
    try:
        for _ in range(2):
            gradients(model, wrapped, sample)
    except RuntimeError as error:
        return str(error)
    return ""


def main(rank, world, port, out):
    rank, world = int(rank), int(world)
    d = toy_dictionary()
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
    )
    grads, errors = {}, {}
    for mode in MODES:
        sample = batch(d, mode == "in", rank * EXAMPLES_PER_RANK, EXAMPLES_PER_RANK)
        for backend in BACKENDS:
            model = classifier(d, plug_in=mode == "in")
            grads[backend, mode] = gradients(model, wrap(model, backend, True), sample)
        errors[mode] = ddp_error(classifier(d, plug_in=mode == "in"), sample)
    torch.save({"grads": grads, "errors": errors}, out)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:])
