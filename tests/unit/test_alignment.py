"""Word-alignment self-labelling (XLM-Align §3.1): eq. 1, Sinkhorn (eqs. 3-6), itermax (eqs. 7-9).

Sinkhorn is checked against an independent solver (POT's ``ot.sinkhorn``); filtering against a
hand-computed example; the whole chain against planted permutations.
"""

import math

import numpy as np
import ot
import pytest
import torch
import torch.nn.functional as F

from veco_plugin.alignment import (
    argmax_links,
    itermax,
    itermax_step,
    pharaoh,
    self_label,
    similarity,
    sinkhorn,
    word_links,
)


def lengths_to_mask(lengths, size) -> torch.Tensor:
    """[len_b] -> (B, size) bool, True on the first len_b positions."""
    return torch.arange(size)[None, :] < torch.tensor(lengths)[:, None]


def pot_plan(f_sim: torch.Tensor, mu: float, iterations: int) -> torch.Tensor:
    """POT's Sinkhorn with unit marginals on one (n, m) problem: K = exp(-M / reg), M = -f_sim.

    POT starts from u and updates v first and u last, the reverse of eq. 6; its plan agrees
    with ours at convergence, and after any number of iterations on the transposed problem.
    """
    n, m = f_sim.shape
    M = -f_sim.double().numpy()
    plan = ot.sinkhorn(
        np.ones(n), np.ones(m), M, reg=mu, numItermax=iterations, stopThr=0.0, warn=False
    )
    return torch.from_numpy(plan)


def planted(lengths_src, lengths_tgt, dim=128, norm=30.0, seed=0):
    """Hidden states where source token i is a noisy copy of target token perm(i).

    Source sentence b has n_b tokens, target m_b >= n_b; source i is planted at target
    ``perms[b][i]``, the other target tokens are unrelated. Returns (src, tgt, masks, gold),
    gold (B, n, m) bool with the planted pairs.
    """
    g = torch.Generator().manual_seed(seed)
    B, n, m = len(lengths_src), max(lengths_src), max(lengths_tgt)
    src = F.normalize(torch.randn(B, n, dim, generator=g), dim=-1) * norm
    tgt = F.normalize(torch.randn(B, m, dim, generator=g), dim=-1) * norm
    gold = torch.zeros(B, n, m, dtype=torch.bool)
    for b, (nb, mb) in enumerate(zip(lengths_src, lengths_tgt)):
        perm = torch.randperm(mb, generator=g)[:nb]
        noise = 0.1 * torch.randn(nb, dim, generator=g)
        tgt[b, perm] = F.normalize(src[b, :nb] / norm + noise / math.sqrt(dim), dim=-1) * norm
        gold[b, torch.arange(nb), perm] = True
    return src, tgt, lengths_to_mask(lengths_src, n), lengths_to_mask(lengths_tgt, m), gold


def new_links_per_iteration(A, src_mask, tgt_mask, iterations, **kw):
    """Run itermax step by step; yield the (B, n, m) bool links added by each iteration."""
    links = torch.zeros(A.shape, dtype=torch.bool)
    for _ in range(iterations):
        updated, A = itermax_step(A, links, src_mask, tgt_mask, **kw)
        yield updated & ~links
        links = updated


# --- eq. 1 -----------------------------------------------------------------------------------


def test_similarity_is_log_of_clamped_dot_product():
    src = torch.tensor([[[1.0, 0.0], [0.0, 2.0]]])  # (1, 2, 2)
    tgt = torch.tensor([[[3.0, 0.0], [-1.0, 0.0], [0.0, 0.5]]])  # (1, 3, 2)
    expected = torch.tensor([[[math.log(3.0), math.log(1e-6), math.log(1e-6)]]])
    expected = torch.cat([expected, torch.tensor([[[math.log(1e-6)] * 2 + [0.0]]])], dim=1)
    f_sim = similarity(src, tgt, eps=1e-6)
    assert f_sim.dtype == torch.float32 and f_sim.shape == (1, 2, 3)
    torch.testing.assert_close(f_sim, expected)


# --- eqs. 3-6: Sinkhorn ------------------------------------------------------------------------


@pytest.mark.parametrize("mu", [1.0, 0.3])
def test_sinkhorn_matches_pot_on_square_problems(mu):
    g = torch.Generator().manual_seed(1)
    f_sim = torch.randn(3, 6, 6, generator=g)
    mask = torch.ones(3, 6, dtype=torch.bool)
    A = sinkhorn(f_sim, mask, mask, mu=mu, iterations=500)
    for b in range(3):
        torch.testing.assert_close(A[b].double(), pot_plan(f_sim[b], mu, 500), atol=1e-5, rtol=0)


@pytest.mark.parametrize("iterations", [1, 2, 5])
def test_sinkhorn_matches_pot_on_the_transpose_after_any_iteration(iterations):
    """POT normalises rows last, eq. 6 columns last: ours(f_sim) == POT(f_sim^T)^T exactly."""
    g = torch.Generator().manual_seed(9)
    f_sim = torch.randn(2, 4, 6, generator=g)
    src_mask, tgt_mask = torch.ones(2, 4, dtype=torch.bool), torch.ones(2, 6, dtype=torch.bool)
    A = sinkhorn(f_sim, src_mask, tgt_mask, mu=0.7, iterations=iterations)
    for b in range(2):
        expected = pot_plan(f_sim[b].T, 0.7, iterations).T
        torch.testing.assert_close(A[b].double(), expected, atol=1e-6, rtol=1e-5)


def test_sinkhorn_with_padding_matches_pot_on_each_unpadded_problem():
    g = torch.Generator().manual_seed(2)
    lengths = [7, 4, 1, 5]
    f_sim = 3.0 * torch.rand(4, 7, 7, generator=g)
    mask = lengths_to_mask(lengths, 7)
    A = sinkhorn(f_sim, mask, mask, mu=0.5, iterations=500)
    for b, n in enumerate(lengths):
        expected = pot_plan(f_sim[b, :n, :n], 0.5, 500)
        torch.testing.assert_close(A[b, :n, :n].double(), expected, atol=1e-5, rtol=0)
        assert (A[b, n:] == 0).all() and (A[b, :, n:] == 0).all()  # exact zeros


def test_sinkhorn_is_doubly_stochastic_at_convergence():
    g = torch.Generator().manual_seed(3)
    lengths = [9, 6]
    mask = lengths_to_mask(lengths, 9)
    A = sinkhorn(torch.randn(2, 9, 9, generator=g), mask, mask, iterations=200)
    ones = mask.float()
    torch.testing.assert_close(A.sum(dim=2), ones, atol=1e-5, rtol=0)
    torch.testing.assert_close(A.sum(dim=1), ones, atol=1e-5, rtol=0)


@pytest.mark.parametrize("iterations", [1, 2, 3])
def test_sinkhorn_columns_sum_to_one_after_any_iteration(iterations):
    """v is updated last (eq. 6), so every real column is normalised even when n != m."""
    g = torch.Generator().manual_seed(4)
    src_mask = lengths_to_mask([5, 3, 8], 8)
    tgt_mask = lengths_to_mask([7, 6, 2], 7)
    A = sinkhorn(2.0 * torch.randn(3, 8, 7, generator=g), src_mask, tgt_mask, iterations=iterations)
    torch.testing.assert_close(A.sum(dim=1), tgt_mask.float(), atol=1e-6, rtol=0)
    valid = src_mask[:, :, None] & tgt_mask[:, None, :]
    assert (A[~valid] == 0).all() and (A[valid] > 0).all()


def test_sinkhorn_default_is_two_iterations_of_eq6_in_probability_space():
    g = torch.Generator().manual_seed(5)
    f_sim = torch.randn(1, 4, 3, generator=g)
    mask_s, mask_t = torch.ones(1, 4, dtype=torch.bool), torch.ones(1, 3, dtype=torch.bool)
    K = f_sim[0].double().exp()  # mu = 1
    v = torch.ones(3, dtype=torch.float64)
    for _ in range(2):
        u = 1.0 / (K @ v)
        v = 1.0 / (K.T @ u)
    expected = u[:, None] * K * v[None, :]
    torch.testing.assert_close(sinkhorn(f_sim, mask_s, mask_t)[0].double(), expected)


def test_sinkhorn_empty_sentences_give_zeros_and_finite_gradients():
    f_sim = torch.randn(3, 4, 5, requires_grad=True)
    src_mask = lengths_to_mask([0, 4, 2], 4)
    tgt_mask = lengths_to_mask([3, 0, 5], 5)
    A = sinkhorn(f_sim, src_mask, tgt_mask)
    assert (A[0] == 0).all() and (A[1] == 0).all() and torch.isfinite(A).all()
    (A * torch.randn_like(A)).sum().backward()
    assert torch.isfinite(f_sim.grad).all()


# --- eqs. 7-9: argmax and itermax -----------------------------------------------------------


def test_argmax_links_one_per_real_row_and_column():
    A = torch.tensor([[[0.1, 0.7, 9.0], [0.5, 0.2, 9.0], [9.0, 9.0, 9.0]]])  # 9 = padding
    mask = lengths_to_mask([2], 3)
    forward, backward = argmax_links(A, mask, mask)
    assert forward[0].tolist() == [[False, True, False], [True, False, False], [False] * 3]
    assert backward[0].tolist() == [[False, True, False], [True, False, False], [False] * 3]
    empty = torch.zeros(1, 3, dtype=torch.bool)
    for links in argmax_links(A, empty, mask) + argmax_links(A, mask, empty):
        assert not links.any()


def test_itermax_hand_computed_example_of_eq9():
    A = torch.tensor([[[0.60, 0.25, 0.15], [0.40, 0.38, 0.22], [0.05, 0.10, 0.85]]])
    mask = torch.ones(1, 3, dtype=torch.bool)
    none = torch.zeros(1, 3, 3, dtype=torch.bool)
    # Iteration 1: rows pick columns 0, 0, 2; columns pick rows 0, 1, 2 -> {(0,0), (2,2)}.
    links, A1 = itermax_step(A, none, mask, mask, alpha=0.9)
    assert links[0].nonzero().tolist() == [[0, 0], [2, 2]]
    # Linked cells -> 0; a cell whose row or column holds a link -> 0.9 x; (1,1) untouched;
    # (0,2) and (2,0) have a linked row AND column: zeroed (Itermax), not only discounted.
    expected = [[0.0, 0.225, 0.0], [0.36, 0.38, 0.198], [0.0, 0.09, 0.0]]
    torch.testing.assert_close(A1[0], torch.tensor(expected))
    # Iteration 2: row 1 now prefers column 1 (0.38 > 0.9 x 0.40), which prefers row 1.
    links, A2 = itermax_step(A1, links, mask, mask, alpha=0.9)
    assert links[0].nonzero().tolist() == [[0, 0], [1, 1], [2, 2]]
    assert (A2 == 0).all()  # every row and column is aligned
    assert itermax(A, mask, mask)[0].nonzero().tolist() == [[0, 0], [1, 1], [2, 2]]
    # Without the discount, row 1 keeps column 0, which now prefers row 1.
    assert itermax(A, mask, mask, alpha=1.0)[0].nonzero().tolist() == [[0, 0], [1, 0], [2, 2]]
    # Read literally, eq. 9 only discounts the doubly-aligned cells (0,2) and (2,0).
    _, A1_literal = itermax_step(A, none, mask, mask, alpha=0.9, discount_aligned_pairs=True)
    expected[0][2], expected[2][0] = 0.9 * 0.15, 0.9 * 0.05
    torch.testing.assert_close(A1_literal[0], torch.tensor(expected))


def test_itermax_literal_eq9_keeps_linking_once_everything_is_aligned():
    A = torch.tensor([[[0.9, 0.3], [0.2, 0.8]]])
    mask = torch.ones(1, 2, dtype=torch.bool)
    assert itermax(A, mask, mask)[0].nonzero().tolist() == [[0, 0], [1, 1]]
    literal = itermax(A, mask, mask, discount_aligned_pairs=True)
    assert literal[0].nonzero().tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]


@pytest.mark.parametrize("discount_aligned_pairs", [False, True])
def test_itermax_never_links_a_row_or_column_twice_in_one_iteration(discount_aligned_pairs):
    g = torch.Generator().manual_seed(6)
    # Heavy ties: constant matrices and values drawn from {1, 2, 3}, plus padding.
    A = torch.cat([torch.ones(2, 6, 6), torch.randint(1, 4, (30, 6, 6), generator=g).float()])
    src_mask = lengths_to_mask(torch.randint(0, 7, (32,), generator=g).tolist(), 6)
    tgt_mask = lengths_to_mask(torch.randint(0, 7, (32,), generator=g).tolist(), 6)
    valid = src_mask[:, :, None] & tgt_mask[:, None, :]
    total = torch.zeros_like(valid)
    kw = dict(alpha=0.9, discount_aligned_pairs=discount_aligned_pairs)
    for new in new_links_per_iteration(A, src_mask, tgt_mask, 5, **kw):
        assert new.sum(dim=2).max() <= 1 and new.sum(dim=1).max() <= 1
        assert not (new & ~valid).any()
        total |= new
    assert total.any()
    assert torch.equal(total, itermax(A, src_mask, tgt_mask, 5, **kw))


def test_itermax_adds_no_link_on_zero_mass():
    A = torch.zeros(1, 3, 3)
    mask = torch.ones(1, 3, dtype=torch.bool)
    assert not itermax(A, mask, mask).any()


# --- self_label: the whole chain ------------------------------------------------------------


def test_self_label_recovers_a_planted_permutation_in_a_padded_batch():
    src, tgt, src_mask, tgt_mask, gold = planted([7, 5, 3, 4], [7, 5, 3, 6])
    links = self_label(src, tgt, src_mask, tgt_mask)
    assert links.dtype == torch.bool and links.shape == (4, 7, 7)
    assert torch.equal(links[:3], gold[:3])  # square sentences, two of them padded
    # n < m: iteration 1 finds every planted pair; iteration 2 may add links from already
    # aligned source tokens to the unplanted target tokens, never to a planted column.
    assert torch.equal(self_label(src, tgt, src_mask, tgt_mask, filter_iterations=1)[3], gold[3])
    planted_cols = gold[3].any(dim=0)
    assert torch.equal(links[3][:, planted_cols], gold[3][:, planted_cols])
    valid = src_mask[:, :, None] & tgt_mask[:, None, :]
    assert not (links & ~valid).any()


def test_self_label_small_mu_and_long_sentences_stay_finite():
    src, tgt, src_mask, tgt_mask, gold = planted([300], [300], dim=256, seed=7)
    for mu in (0.01, 1.0):
        A = sinkhorn(similarity(src, tgt), src_mask, tgt_mask, mu=mu)
        assert torch.isfinite(A).all()
        torch.testing.assert_close(A.sum(dim=1), tgt_mask.float(), atol=1e-4, rtol=0)
        assert torch.equal(itermax(A, src_mask, tgt_mask), gold)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_self_label_half_precision_inputs(dtype):
    src, tgt, src_mask, tgt_mask, gold = planted([12, 9], [12, 9], dim=128, norm=30.0, seed=8)
    A = sinkhorn(similarity(src.to(dtype), tgt.to(dtype)), src_mask, tgt_mask)
    assert A.dtype == torch.float32 and torch.isfinite(A).all()
    links = self_label(src.to(dtype), tgt.to(dtype), src_mask, tgt_mask)
    assert torch.equal(links, self_label(src, tgt, src_mask, tgt_mask))
    assert torch.equal(links, gold)


# --- words ------------------------------------------------------------------------------------


def test_word_links_merge_pieces_and_skip_padding():
    # Sentence 0: source words "a bcd e" as pieces a|b c d|e between <s> and </s>;
    # target words "x y" as pieces x|y1 y2, then padding.
    src_words = torch.tensor([[-1, 0, 1, 1, 1, 2, -1], [-1, 0, 0, -1, -1, -1, -1]])
    tgt_words = torch.tensor([[-1, 0, 1, 1, -1], [-1, 0, 1, 2, -1]])
    links = torch.zeros(2, 7, 5, dtype=torch.bool)
    links[0, 1, 1] = True  # a - x
    links[0, 3, 3] = True  # c - y2
    links[0, 4, 2] = True  # d - y1: same word pair again
    links[0, 0, 0] = True  # <s> - <s>: belongs to no word
    links[0, 6, 2] = True  # </s> - y1: belongs to no word
    links[1, 2, 3] = True
    words = word_links(links, src_words, tgt_words, n_src_words=3, n_tgt_words=3)
    assert words.dtype == torch.bool and words.shape == (2, 3, 3)
    assert words[0].nonzero().tolist() == [[0, 0], [1, 1]]
    assert words[1].nonzero().tolist() == [[0, 2]]
    assert pharaoh(words[0]) == "0-0 1-1"
    assert pharaoh(words[1]) == "0-2"


def test_pharaoh_sorts_by_source_then_target():
    w = torch.zeros(3, 4, dtype=torch.bool)
    assert pharaoh(w) == ""
    w[2, 0] = w[0, 3] = w[0, 1] = w[1, 1] = True
    assert pharaoh(w) == "0-1 0-3 1-1 2-0"
