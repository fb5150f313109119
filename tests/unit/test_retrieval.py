"""veco_plugin.evaluation.retrieval: pooling, the margin of Artetxe & Schwenk (2019) against
its definition, torch == faiss search, batching == one sentence at a time."""

import pytest
import torch
import torch.nn.functional as F

from tests.helpers.toy import build, toy_dictionary
from veco_plugin.errors import VecoUserError
from veco_plugin.evaluation import retrieval as R
from veco_plugin.models.features import layer_states, resolve_layer
from veco_plugin.models.layer_spec import default_layer


def _pairs(n: int, dim: int = 16, noise: float = 0.8, seed: int = 0):
    """Line-aligned embeddings: targets are noisy copies of the sources."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randn(n, dim, generator=g)
    return src, src + noise * torch.randn(n, dim, generator=g)


def test_mean_pool_ignores_padding():
    hidden = torch.arange(24, dtype=torch.float).view(2, 3, 4)
    mask = torch.tensor([[True, True, False], [True, True, True]])
    pooled = R.mean_pool(hidden, mask)
    # exact: integer-valued states, so every sum and mean is exact in any order
    assert torch.equal(pooled[0], hidden[0, :2].mean(0))
    assert torch.equal(pooled[1], hidden[1].mean(0))


def test_margin_is_the_ratio_margin_by_definition():
    """Eq. 2 of Artetxe & Schwenk (2019), ratio margin, written out with loops."""
    src, tgt = _pairs(30, noise=1.5)
    k = 4
    x, y = F.normalize(src, dim=-1), F.normalize(tgt, dim=-1)
    cos = x @ y.t()  # (N, M)
    x_nn = cos.topk(k, dim=1).values.sum(1) / (2 * k)  # sum over NN_k(x) / 2k
    y_nn = cos.t().topk(k, dim=1).values.sum(1) / (2 * k)
    expected, gaps = [], []
    for i in range(30):
        candidates = cos[i].topk(k).indices.tolist()
        margins = [float(cos[i, j] / (x_nn[i] + y_nn[j])) for j in candidates]
        expected.append(candidates[max(range(k), key=margins.__getitem__)])
        gaps.append(sorted(margins)[-1] - sorted(margins)[-2])
    # best_targets searches in chunks, the loops above on the whole matrix: their floats
    # differ by rounding (~1e-7), so the rankings agree exactly only where no two are that
    # close; every row's best is ahead by > 1e-4 here (measured: margin >= 5.2e-3, cosine
    # >= 1.7e-3), so the exact comparisons below hold on any CPU
    top2 = cos.topk(2, dim=1).values
    assert min(gaps) > 1e-4 and (top2[:, 0] - top2[:, 1]).min() > 1e-4
    assert R.best_targets(src, tgt, "margin", k).tolist() == expected
    assert R.best_targets(src, tgt, "cosine").tolist() == cos.argmax(1).tolist()
    assert expected != cos.argmax(1).tolist()  # the margin changes something here


@pytest.mark.parametrize("scoring", R.SCORINGS)
def test_faiss_and_torch_find_the_same_neighbours(scoring):
    pytest.importorskip("faiss")
    src, tgt = _pairs(300, noise=1.2, seed=1)
    by_torch = R.best_targets(src, tgt, scoring, 4, "torch")
    # faiss and torch are different kernels (scores 1e-5 apart at most): each row's best is
    # ahead of the next by more than that here (measured: cosine 6.2e-5, margin 1.5e-4)
    assert torch.equal(R.best_targets(src, tgt, scoring, 4, "faiss"), by_torch)
    scores_t, ids_t = R.knn_torch(F.normalize(src, dim=-1), F.normalize(tgt, dim=-1), 4, chunk=7)
    scores_f, ids_f = R.knn_faiss(F.normalize(src, dim=-1), F.normalize(tgt, dim=-1), 4)
    torch.testing.assert_close(scores_t, scores_f, atol=1e-5, rtol=0)
    # the k nearest within that tolerance, not bit-equal rankings: neighbours closer than
    # 1e-5 may come in either order (here two are 6.6e-6 apart); each search's i-th id
    # has, in float64, the i-th best score to 1e-5
    x, y = F.normalize(src.double(), dim=-1), F.normalize(tgt.double(), dim=-1)
    exact = (x @ y.t()).topk(4, dim=1).values
    for ids in (ids_t, ids_f):
        torch.testing.assert_close((y[ids] * x[:, None]).sum(-1), exact, atol=1e-5, rtol=0)


def test_accuracy_both_directions_and_search_choice():
    src, tgt = _pairs(50, noise=0.1)
    result = R.evaluate(src, tgt, layer=1, scoring="margin", k=4, search="torch")
    assert (result.src2tgt, result.tgt2src, result.sentences, result.search) == (
        1.0,
        1.0,
        50,
        "torch",
    )
    shuffled = R.evaluate(src, tgt.flip(0), layer=1, search="torch")
    assert shuffled.src2tgt == shuffled.tgt2src == 0.0
    assert R.choose_search("auto", R.FAISS_POOL - 1) == "torch"
    assert R.top1_accuracy(torch.tensor([0, 2, 2, 3])) == 0.75
    assert R.best_targets(src[:3], tgt[:2], "margin", k=4).shape == (3,)  # k capped at M


def test_errors_name_the_flag():
    src, tgt = _pairs(4)
    with pytest.raises(VecoUserError, match="--scoring dot: one of cosine, margin"):
        R.best_targets(src, tgt, "dot")
    with pytest.raises(VecoUserError, match="--k 0: must be positive"):
        R.best_targets(src, tgt, "margin", 0)
    with pytest.raises(VecoUserError, match="--search annoy"):
        R.choose_search("annoy", 10)
    with pytest.raises(VecoUserError, match="4 source but 3 target sentences"):
        R.evaluate(src, tgt[:3], layer=1)


def test_sentence_ids_and_layers():
    d = toy_dictionary()
    ids, cut = R.sentence_ids([["w1", "w2", "w3"], [], ["w4"] * 10], d, 6)
    assert cut == 1
    assert ids[0] == [d.bos(), d.index("w1"), d.index("w2"), d.index("w3"), d.eos()]
    assert ids[1] == [d.bos(), d.eos()] and len(ids[2]) == 6 and ids[2][-1] == d.eos()
    assert [default_layer("retrieve", n) for n in (1, 2, 6, 12, 24)] == [1, 1, 4, 7, 14]
    model = build("veco_tiny", toy_dictionary())
    assert resolve_layer(model, None, "retrieve") == 1
    with pytest.raises(VecoUserError, match=r"--layer 3: the model has layers 0..2"):
        resolve_layer(model, 3, "retrieve")


def test_batched_embedding_equals_one_sentence_at_a_time():
    d = toy_dictionary()
    model = build("veco_tiny", d).eval()
    g = torch.Generator().manual_seed(0)
    sentences = [
        [d.bos(), *torch.randint(d.nspecial, len(d) - 1, (n,), generator=g).tolist(), d.eos()]
        for n in (5, 1, 12, 0, 7, 3)
    ]
    batched = R.embed(model, sentences, 2, d.pad(), batch_size=4)
    with torch.no_grad():
        alone = torch.stack(
            [layer_states(model, torch.tensor([s]), 2)[0].mean(0) for s in sentences]
        )
    torch.testing.assert_close(batched, alone, atol=1e-5, rtol=0)
    assert R.embed(model, [], 2, d.pad()).shape == (0, 64)
