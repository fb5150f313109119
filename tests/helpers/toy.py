"""Toy dictionaries, tasks and models for unit tests (built via fairseq's registries)."""

import argparse

import numpy as np
import torch
from fairseq import models, options
from fairseq.data import Dictionary, ListDataset

from benchmarks.common import toy_dictionary  # noqa: F401  (the benchmarks' vocabulary)
from veco_plugin.data.dictionary import DictionaryTask
from veco_plugin.data.masking import MaskingScheme
from veco_plugin.data.pair_dataset import VecoPairDataset
from veco_plugin.models.requests import TwoStream


class ToyTask(DictionaryTask):
    """The package's ``DictionaryTask`` with the toy models' 64 positions."""

    def __init__(self, dictionary: Dictionary, max_positions: int = 64) -> None:
        super().__init__(dictionary, max_positions)


def model_args(arch: str, **overrides) -> argparse.Namespace:
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, ["DATA", "--arch", arch, "--task", "masked_lm"])
    args.max_positions = 64
    args.dropout = args.attention_dropout = 0.0
    for k, v in overrides.items():
        setattr(args, k, v)
    return args


def build(arch: str, dictionary, seed: int = 0, **overrides):
    torch.manual_seed(seed)
    args = model_args(arch, **overrides)
    return models.ARCH_MODEL_REGISTRY[arch].build_model(args, ToyTask(dictionary))


def random_tokens(dictionary, batch: int, length: int, seed: int = 0, pad_tail: int = 0):
    """(batch, length) ids of ordinary symbols, bos first, eos last; the last
    ``pad_tail`` positions of odd rows are padding (bos/eos moved accordingly)."""
    g = torch.Generator().manual_seed(seed)
    t = torch.randint(dictionary.nspecial, len(dictionary) - 1, (batch, length), generator=g)
    t[:, 0] = dictionary.bos()
    t[:, -1] = dictionary.eos()
    if pad_tail:
        t[1::2, -pad_tail - 1] = dictionary.eos()
        t[1::2, -pad_tail:] = dictionary.pad()
    return t


def stream_logits(model, tokens, **options):
    """H- and S-stream LM logits (2B, T, V) at every position of the stacked pairs
    ``tokens`` (2B, T), through the model's one entry point."""
    every = torch.ones_like(tokens, dtype=torch.bool)
    out = model(requests={"p": TwoStream(tokens, every, **options)})["p"]
    return tuple(logits.view(*tokens.shape, -1) for logits in (out.h_logits, out.s_logits))


def pair_dataset(d, n_pairs=6, seed=0) -> VecoPairDataset:
    """Random translation pairs of 4-12 tokens, masked at 30%."""
    rng = np.random.default_rng(seed)
    lines = [
        torch.from_numpy(
            np.append(rng.integers(d.nspecial, len(d) - 1, rng.integers(4, 12)), d.eos())
        )
        for _ in range(n_pairs)
    ]
    corpus = ListDataset(lines, np.array([len(t) for t in lines]))
    scheme = MaskingScheme(0.3, d.index("<mask>"), d.pad(), d.nspecial, len(d))
    return VecoPairDataset.parallel(
        corpus, corpus, name="t", bos=d.bos(), max_len=32, scheme=scheme
    )


def pair_batch(d, n_pairs=6, seed=0):
    """A collated batch of ``pair_dataset``."""
    ds = pair_dataset(d, n_pairs, seed)
    return ds.collater([ds[i] for i in range(len(ds))])


def diagonal_links(batch, many_to_one: bool = False) -> torch.Tensor:
    """``batch["links"]`` (B, W, W) for ``pair_dataset`` pairs (one sentence on both
    sides): x piece i -- y piece i for every real piece; ``many_to_one`` also links x
    piece 1 to y piece 2."""
    width = batch["pair_tokens"].size(1)
    lengths = batch["first_lengths"].tolist()
    links = torch.zeros(len(lengths), width, width, dtype=torch.bool)
    for b, length in enumerate(lengths):
        for i in range(1, length - 1):
            links[b, i, i] = True
        if many_to_one:
            links[b, 1, 2] = True
    return links
