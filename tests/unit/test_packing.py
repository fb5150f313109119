"""Several pairs a row (``veco_plugin.data.packing``): the same pairs give the same
losses and gradients packed and padded, for every objective, and no attention crosses
a pair."""

from collections import Counter

import numpy as np
import pytest
import torch
from fairseq import tasks
from fairseq.data import ListDataset

from tests.helpers.runner import USER_DIR, train_cfg
from tests.helpers.toy import build, toy_dictionary
from tests.helpers.word_list import table_criterion
from veco_plugin.data.masking import MaskingScheme
from veco_plugin.data.packing import (
    RowCost,
    packed_rows,
    partition,
    position_cost,
    turned_rows,
)
from veco_plugin.data.pair_dataset import VecoPairDataset
from veco_plugin.models.requests import Packing, PlugOut, TwoStream
from veco_plugin.modules.pair_layout import Halves
from veco_plugin.objectives import WORD_ALIGNMENTS, objective

CRITERIA = (
    "ca_mlm", "tlm", "tlm:reset", "dwa", "align_mlm", "weam", "dict_mlm", "dict_mlm:synonym_target"
)  # fmt: skip
"""``name:mode``: ``--dict-mlm-mode mode``; ``tlm:reset``: ``--tlm-reset-positions``."""
TOLERANCE = dict(rtol=1e-4, atol=1e-5)
"""fp32: the same sums over other shapes (rows of other widths, other batch sizes)."""


def adjacent_pairs(d, pack: bool, lines: int = 24, seed: int = 0) -> VecoPairDataset:
    """Adjacent random lines of 3-14 tokens (VECO's monolingual pairs: sides of
    independent lengths), masked at 30 %, rows of 32."""
    rng = np.random.default_rng(seed)
    words = [rng.integers(d.nspecial, len(d) - 1, rng.integers(3, 14)) for _ in range(lines)]
    corpus = [torch.from_numpy(np.append(w, d.eos())) for w in words]
    data = ListDataset(corpus, np.array([len(t) for t in corpus]))
    scheme = MaskingScheme(0.3, d.index("<mask>"), d.pad(), d.nspecial, len(d))
    return VecoPairDataset.adjacent(
        data, name="t", bos=d.bos(), max_len=32, scheme=scheme, pack=RowCost() if pack else None
    )


def batches(d):
    """The same samples collated padded and packed."""
    padded, packed = adjacent_pairs(d, False), adjacent_pairs(d, True)
    samples = [padded[i] for i in range(len(padded))]
    return padded.collater(samples), packed.collater(samples)


def test_rows_are_evened_by_moves_and_exchanges_after_the_greedy_fill():
    # greedy: 8 | 7, 6 | 5 -> 8 5 4 = 17 against 7 6 = 13; exchanging 8 for 6 evens them
    row_of = partition(np.array([8, 7, 6, 5, 4]), 2)
    assert np.bincount(row_of, weights=[8, 7, 6, 5, 4]).tolist() == [15, 15]


def test_stacked_pairs_are_turned_to_even_the_halves():
    sizes = np.array([(5, 1), (5, 1), (5, 1), (5, 1), (2, 2)])
    rows, width = turned_rows(sizes, np.zeros(5, dtype=np.int64), 1)
    assert width == 14 and [turned for _, turned in rows[0]] == [False, True, False, True, False]
    # rows about 6 wide, up to 9: two of 8 (16 positions) beat three of 7 (21), five of 5
    rows, width = packed_rows(sizes, 6)
    assert (len(rows), width) == (2, 8)
    assert sorted(i for row in rows for i, _ in row) == [0, 1, 2, 3, 4]


def test_a_row_turning_cannot_even_gives_a_pair_away():
    # rows of equal totals, but (10, 2) beside (6, 6) is 16 wide whichever way it lies:
    # exchanged for (2, 10) of the other row, both rows are 12 wide
    sizes = np.array([(10, 2), (2, 10), (6, 6), (6, 6)])
    rows, width = turned_rows(sizes, np.array([0, 1, 0, 1]), 2)
    assert width == 12
    assert sorted(sorted(i for i, _ in row) for row in rows) == [[0, 1], [2, 3]]


def test_wide_rows_pay_for_their_attention():
    # six pairs of 8 and six of 4 a side: one a row is 12 rows of 8 (96 positions a half);
    # six rows of 12 or three of 24 hold 72, the narrower wins the tie; with a small
    # model's cost per position (1: the attention's work weighs as much as the pad's),
    # one a row is the cheapest
    sizes = np.array([(8, 8)] * 6 + [(4, 4)] * 6)

    def layout(cost):
        rows, width = packed_rows(sizes, 24, cost)
        return len(rows), width

    assert [layout(cost) for cost in (None, 1000.0, 1.0)] == [(6, 12), (6, 12), (12, 8)]
    assert position_cost(64, 256) == 384  # veco_tiny: 2 d + f


def test_the_task_weighs_rows_by_the_model_it_builds(tmp_path):
    toy_dictionary().save(str(tmp_path / "dict.txt"))
    cfg = train_cfg(
        [tmp_path, "--user-dir", USER_DIR, "--task", "veco_pretraining", "--arch", "veco_tiny"]
        + ["--criterion", "ca_mlm", "--mono-langs", "en", "--bi-pairs", "en-de", "--cpu"]
    )
    task = tasks.setup_task(cfg.task)
    assert task.row_cost.position is None
    task.build_model(cfg.model)
    assert task.row_cost.position == position_cost(64, 256)


def test_a_packed_batch_holds_each_token_once_with_positions_restarting_per_pair():
    d = toy_dictionary()
    padded, packed = batches(d)
    pad = d.pad()
    for layout in ("pair", "concat"):
        tokens = packed[f"{layout}_tokens"]
        real = Counter(padded[f"{layout}_tokens"][padded[f"{layout}_tokens"].ne(pad)].tolist())
        assert Counter(tokens[tokens.ne(pad)].tolist()) == real
        assert tokens.eq(pad).sum() < padded[f"{layout}_tokens"].eq(pad).sum()
        segments, positions = packed[f"{layout}_segments"], packed[f"{layout}_positions"]
        assert segments.eq(0).equal(tokens.eq(pad))
        # every segment starts with <s> at the first position
        starts = positions.eq(pad + 1)
        assert tokens[starts].eq(d.bos()).all() and starts.sum() == segments.amax(1).sum()
    # the halves read back each pair's sides, as the padded batch has them
    for batch in (padded, packed):
        halves = Halves.of(batch)
        x, y = halves.gather(batch["concat_tokens"]).masked_fill(~halves.real(), pad)
        width = halves.width
        assert x.equal(padded["pair_tokens"][: len(x), :width])
        assert y.equal(padded["pair_tokens"][len(x) :, :width])


def parts(name, tmp_path):
    d = toy_dictionary()
    name, _, mode = name.partition(":")
    extra = {"tlm_reset_positions": True} if mode == "reset" else {}
    extra.update({"dict_mlm_mode": mode} if name == "dict_mlm" and mode else {})
    if name == "dict_mlm":  # every draw taken: the same inputs in either layout
        extra["dict_mlm_prob"] = 1.0
    criterion = table_criterion(name, d, tmp_path, **extra)
    model = build("veco_tiny", d)
    criterion.extend_model(model)
    model.train()
    samples = []
    for batch in batches(d):
        sample = {"mono": batch, "bi": batch}
        samples.append(sample)
    if WORD_ALIGNMENTS in objective(name).needs:
        links = diagonal_links(samples[0]["bi"], d)
        for sample in samples:
            sample["bi"] = dict(sample["bi"], links=links)
    return criterion, model, samples


def diagonal_links(batch, d):
    """x piece i -- y piece i of each pair, where both sides have one."""
    halves = Halves.of(batch)
    x, y = halves.pieces(batch["concat_tokens"], d.pad(), d.bos(), d.eos())
    return (x & y).unsqueeze(2) & torch.eye(halves.width, dtype=torch.bool)


@pytest.mark.parametrize("name", CRITERIA)
def test_packed_and_padded_pairs_give_the_same_loss_and_gradients(name, tmp_path):
    criterion, model, samples = parts(name, tmp_path)
    results = []
    for sample in samples:
        model.zero_grad()
        loss, size, logged = criterion(model, sample)
        loss.backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        results.append((loss.detach(), size, logged, grads))
    (loss_a, size_a, log_a, grads_a), (loss_b, size_b, log_b, grads_b) = results
    assert loss_a.item() > 0 and size_a == size_b
    torch.testing.assert_close(loss_b, loss_a, **TOLERANCE)
    assert grads_a.keys() == grads_b.keys()
    for key in grads_a:
        torch.testing.assert_close(grads_b[key], grads_a[key], **TOLERANCE, msg=key)
    for key, value in log_a.items():
        if torch.is_tensor(value) and value.is_floating_point():
            torch.testing.assert_close(log_b[key], value, **TOLERANCE, msg=key)


def test_no_attention_crosses_a_pair():
    """Change every token of one pair: no other pair's H or S states move, in either
    layout's packed rows (the S stream's cross-attention included)."""
    d = toy_dictionary()
    model = build("veco_tiny", d).eval()
    _, batch = batches(d)
    tokens = batch["pair_tokens"]
    rows = tokens.size(0) // 2
    segments = batch["pair_segments"]
    changed = (segments == 1) & (torch.arange(2 * rows) % rows == 0).unsqueeze(1)
    other = tokens.masked_fill(changed & tokens.ne(d.pad()), d.index("w1"))
    packing = Packing(segments, batch["pair_positions"])

    def states(t):
        out = model(requests={"s": TwoStream(t, features=True, packing=packing)})["s"]
        return out.h, out.s

    with torch.no_grad():
        before, after = states(tokens), states(other)
    # the changed pair: both its rows (x in row 0, y in row R)
    pair = (segments == 1) & (torch.arange(2 * rows) % rows == 0).unsqueeze(1)
    keep = ~pair & tokens.ne(d.pad())
    for a, b in zip(before, after):
        assert not torch.allclose(a[pair], b[pair])
        torch.testing.assert_close(b[keep], a[keep], rtol=0, atol=1e-6)
    concat = batch["concat_tokens"]
    first = batch["concat_segments"].eq(1)
    first[1:] = False  # the first pair of the first row
    packing = Packing(batch["concat_segments"], batch["concat_positions"])

    def hidden(t):
        return model(requests={"p": PlugOut(t, layers=(2,), packing=packing)})["p"].hidden[2]

    with torch.no_grad():
        a, b = hidden(concat), hidden(concat.masked_fill(first, d.index("w1")))
    keep = ~first & concat.ne(d.pad())
    assert not torch.allclose(a[first], b[first])
    torch.testing.assert_close(b[keep], a[keep], rtol=0, atol=1e-6)


def test_an_epoch_of_packed_batches_holds_the_padded_epochs_tokens():
    """fairseq's batches of the whole data set (``batch_by_size`` on the dataset's
    sizes and token costs), collated both ways: the same multiset of (token, target)
    per batch, so per epoch, and never more positions packed than padded."""
    d = toy_dictionary()
    padded, packed = adjacent_pairs(d, False, lines=400), adjacent_pairs(d, True, lines=400)
    order = padded.ordered_indices()
    sampler = padded.batch_by_size(order, max_tokens=600)
    assert len(sampler) > 5
    for indices in sampler:
        samples = [padded[i] for i in indices]
        a, b = padded.collater(samples), packed.collater(samples)
        for layout in ("pair", "concat"):
            pairs_a = zip(
                a[f"{layout}_tokens"].flatten().tolist(), a[f"{layout}_target"].flatten().tolist()
            )
            pairs_b = zip(
                b[f"{layout}_tokens"].flatten().tolist(), b[f"{layout}_target"].flatten().tolist()
            )
            real_a = Counter(p for p in pairs_a if p[0] != d.pad())
            assert Counter(p for p in pairs_b if p[0] != d.pad()) == real_a
            assert b[f"{layout}_tokens"].numel() <= a[f"{layout}_tokens"].numel()
        assert (a["pair_masked"], a["concat_masked"]) == (b["pair_masked"], b["concat_masked"])
