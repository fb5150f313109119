"""Masking rates, special tokens, adjacent-segment pairing, truncation and skipping."""

import numpy as np
import pytest
import torch
from fairseq.data import ListDataset

from tests.helpers.toy import toy_dictionary
from veco_plugin.data.masking import MaskingScheme
from veco_plugin.data.pair_dataset import VecoPairDataset
from veco_plugin.errors import VecoUserError


def _scheme(d, prob):
    return MaskingScheme(prob, d.index("<mask>"), d.pad(), d.nspecial, len(d))


def test_masking_rates_and_80_10_10():
    d = toy_dictionary(200)
    scheme = _scheme(d, 0.15)
    rng = np.random.default_rng(0)
    tokens = np.concatenate([[d.bos()], rng.integers(d.nspecial, len(d) - 1, 4000), [d.eos()]])
    masked_n = as_mask = as_random = kept = 0
    for _ in range(25):
        masked, target = scheme.apply(tokens, rng)
        sel = target != d.pad()
        masked_n += sel.sum()
        as_mask += (masked[sel] == d.index("<mask>")).sum()
        kept += (masked[sel] == tokens[sel]).sum()
        as_random += ((masked[sel] != tokens[sel]) & (masked[sel] != d.index("<mask>"))).sum()
        assert target[0] == target[-1] == d.pad()  # bos / eos never masked
        assert masked[0] == d.bos() and masked[-1] == d.eos()
        assert (masked[1:-1] >= d.nspecial).all()  # random draws are ordinary symbols
    total = 25 * 4000
    assert abs(masked_n / total - 0.15) < 0.005
    assert abs(as_mask / masked_n - 0.8) < 0.02
    # a random draw can hit the original token (1/195): counted as kept
    assert abs(as_random / masked_n - 0.1) < 0.015
    assert abs(kept / masked_n - 0.1) < 0.015


def test_special_tokens_and_mask_never_masked_and_at_least_one():
    d = toy_dictionary()
    scheme = _scheme(d, 0.01)
    tokens = np.array([d.bos(), d.unk(), d.index("<mask>"), d.index("w3"), d.eos()])
    for seed in range(20):
        _, target = scheme.apply(tokens, np.random.default_rng(seed))
        assert np.flatnonzero(target != d.pad()).tolist() == [3]


def _corpus(d, lengths):
    lines = [
        torch.tensor([d.index(f"w{i % 40}")] * (n - 1) + [d.eos()]) for i, n in enumerate(lengths)
    ]
    return ListDataset(lines, np.array(lengths))


def test_adjacent_pairs_truncation_and_empty_lines(caplog):
    d = toy_dictionary()
    corpus = _corpus(d, [5, 6, 7, 1, 40, 3, 9])  # line 3 is empty (eos only)
    ds = VecoPairDataset.adjacent(
        corpus, name="mono", bos=d.bos(), max_len=10, scheme=_scheme(d, 0.15), shuffle=False
    )
    # pairs (0,1), (2,3), (4,5); line 6 has no partner; (2,3) has an empty side
    assert ds.first_index.tolist() == [0, 4] and ds.second_index.tolist() == [1, 5]
    assert "skipping 1 of 3 pairs" in caplog.text and "truncating 1 pairs" in caplog.text
    item = ds[1]
    assert len(item["x"]) == 10 and item["x"][-1] == d.eos() and item["x"][0] == d.bos()
    first_word = d.index("w4")
    np.testing.assert_array_equal(
        np.where(item["x_target"] != d.pad(), item["x_target"], item["x"])[1:-1], first_word
    )


def test_collater_layout():
    d = toy_dictionary()
    corpus = _corpus(d, [4, 6, 5, 3])
    ds = VecoPairDataset.parallel(
        corpus,
        _corpus(d, [3, 3, 8, 2]),
        name="bi",
        bos=d.bos(),
        max_len=16,
        scheme=_scheme(d, 0.25),
    )
    batch = ds.collater([ds[i] for i in range(len(ds))])
    assert batch["pair_tokens"].shape == (8, 9)
    assert batch["concat_tokens"].shape == (4, 15)
    assert batch["first_lengths"].tolist() == [5, 7, 6, 4]
    # the concatenation is exactly x followed by y, per row
    for i in range(4):
        x = batch["pair_tokens"][i][batch["pair_tokens"][i].ne(d.pad())]
        y = batch["pair_tokens"][4 + i][batch["pair_tokens"][4 + i].ne(d.pad())]
        c = batch["concat_tokens"][i][batch["concat_tokens"][i].ne(d.pad())]
        assert torch.equal(c, torch.cat([x, y]))


def _random_corpus(d, n, length, seed):
    rng = np.random.default_rng(seed)
    lines = [
        torch.from_numpy(np.append(rng.integers(d.nspecial, len(d) - 1, length - 1), d.eos()))
        for _ in range(n)
    ]
    return ListDataset(lines, np.full(n, length))


def _masks(ds, indices, draw=None):
    """The x-side mask targets of ``indices`` (as drawn at positions ``draw``)."""
    draw = indices if draw is None else draw
    return [ds.item(i, d)["x_target"].tolist() for i, d in zip(indices, draw)]


def test_masks_are_independent_across_data_sets_epochs_and_resampled_copies():
    from veco_plugin.data.language_mix import VecoResamplingDataset

    d = toy_dictionary(200)
    corpus = _random_corpus(d, 40, 30, seed=0)

    def dataset(name):
        return VecoPairDataset.adjacent(
            corpus, name=name, bos=d.bos(), max_len=64, scheme=_scheme(d, 0.15), seed=1
        )

    en, de = dataset("mono/en/train"), dataset("mono/de/train")
    items = list(range(len(en)))
    # same tokens, same lengths, same seed: only the data set's identity differs
    positions = [[i for i, t in enumerate(m) if t != d.pad()] for m in _masks(en, items)]
    other = [[i for i, t in enumerate(m) if t != d.pad()] for m in _masks(de, items)]
    assert sum(a == b for a, b in zip(positions, other)) <= 1
    # the same item in two epochs
    epoch1 = _masks(en, items)
    en.set_epoch(2)
    assert sum(a == b for a, b in zip(epoch1, _masks(en, items))) <= 1
    # a re-run (a new object, same seed and epoch) is bit-reproducible
    again = dataset("mono/en/train")
    assert _masks(again, items) == epoch1
    # upsampled: copies of one pair in one epoch get their own masks
    up = VecoResamplingDataset(en, size_ratio=5.0, seed=1, epoch=1, replace=True)
    drawn = {}
    for position in range(len(up)):
        drawn.setdefault(int(up._cur_indices.array[position]), []).append(
            up[position]["x_target"].tolist()
        )
    repeated = [masks for masks in drawn.values() if len(masks) > 1]
    assert len(repeated) > 5
    assert all(len({tuple(m) for m in masks}) == len(masks) for masks in repeated)
    # and the resampled view hands batching the underlying pairs' token counts
    np.testing.assert_array_equal(
        up.num_tokens_vec(np.arange(len(up))), en.num_tokens_vec(up._cur_indices.array)
    )


def test_a_max_tokens_too_small_for_the_sub_batches_names_itself():
    """--max-tokens 1 shared by two sub-batches: one line with a subject and the fix."""
    from veco_plugin.data.zip_dataset import sub_batch_sizes

    with pytest.raises(VecoUserError) as info:
        sub_batch_sizes(["mono", "bi"], 1, None, {"mono": None, "bi": None}, {})
    assert str(info.value).startswith("no token per sub-batch in --max-tokens 1, ")
    assert str(info.value).endswith("raise --max-tokens to at least 2")
