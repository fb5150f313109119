"""WEAM's exchange H' = A^T H (eq. 5) on hand-built alignments, and the head of eqs. 6-7."""

import torch
from torch.nn import functional as F

from veco_plugin.modules.word_exchange import VecoWordExchangeHead, exchange


def _states(b=2, w=5, c=3):
    """Integer-valued: the exchange's sums are exact, so the tests compare them exactly."""
    x = torch.arange(b * w * c, dtype=torch.float32).view(b, w, c) + 1
    return x, -(x + 100)


def test_one_to_one_links_swap_vectors_and_unlinked_positions_read_zeros():
    x, y = _states()
    links = torch.zeros(2, 5, 5, dtype=torch.bool)
    links[0, 1, 2] = links[0, 3, 1] = links[1, 2, 2] = True
    x2, y2 = exchange(x, y, links)
    assert torch.equal(x2[0, 1], y[0, 2]) and torch.equal(x2[0, 3], y[0, 1])
    assert torch.equal(y2[0, 2], x[0, 1]) and torch.equal(y2[0, 1], x[0, 3])
    assert torch.equal(x2[1, 2], y[1, 2]) and torch.equal(y2[1, 2], x[1, 2])
    expected_x = torch.zeros_like(x)
    expected_x[0, 1], expected_x[0, 3], expected_x[1, 2] = y[0, 2], y[0, 1], y[1, 2]
    expected_y = torch.zeros_like(y)
    expected_y[0, 2], expected_y[0, 1], expected_y[1, 2] = x[0, 1], x[0, 3], x[1, 2]
    assert torch.equal(x2, expected_x) and torch.equal(y2, expected_y)


def test_a_pair_without_links_reads_zeros_not_nan():
    x, y = _states()
    links = torch.zeros(2, 5, 5, dtype=torch.bool)
    links[1, 0, 0] = True
    x2, y2 = exchange(x, y, links)
    assert torch.isfinite(x2).all() and torch.isfinite(y2).all()
    assert torch.equal(x2[0], torch.zeros(5, 3)) and torch.equal(y2[0], torch.zeros(5, 3))


def test_many_to_one_links_read_the_sum_of_partners():
    x, y = _states(b=1)
    links = torch.zeros(1, 5, 5, dtype=torch.bool)
    links[0, 1, 2] = links[0, 1, 3] = links[0, 4, 3] = True  # x1 -> y2, y3; y3 <- x1, x4
    x2, y2 = exchange(x, y, links)
    assert torch.equal(x2[0, 1], y[0, 2] + y[0, 3])
    assert torch.equal(y2[0, 3], x[0, 1] + x[0, 4])
    assert torch.equal(y2[0, 2], x[0, 1]) and torch.equal(x2[0, 4], y[0, 3])


def test_exchange_is_the_papers_symmetric_matrix_over_the_concatenation():
    """A over the m = 2W positions [x; y] is symmetric and off-diagonal: H' = A^T H."""
    torch.manual_seed(0)
    # integer-valued states: the (8, 8) product and exchange's (4, 4) ones sum in other
    # orders, and sums of small integers are exact in any order, so equality is exact
    x, y = (torch.randint(-50, 51, (2, 4, 3)).double() for _ in range(2))
    links = torch.rand(2, 4, 4) < 0.4
    a = torch.zeros(2, 8, 8, dtype=torch.float64)
    a[:, :4, 4:] = links.double()
    a[:, 4:, :4] = links.double().transpose(1, 2)
    h = torch.bmm(a.transpose(1, 2), torch.cat([x, y], 1))
    x2, y2 = exchange(x, y, links)
    assert torch.equal(torch.cat([x2, y2], 1), h)


def test_exchange_gradients_flow_to_the_partners_only():
    x = torch.randn(1, 3, 2, requires_grad=True)
    y = torch.randn(1, 3, 2, requires_grad=True)
    links = torch.zeros(1, 3, 3, dtype=torch.bool)
    links[0, 0, 2] = True
    x2, _ = exchange(x, y, links)
    x2.sum().backward()
    assert torch.equal(y.grad[0, 2], torch.ones(2)) and y.grad[0, :2].abs().sum() == 0
    assert x.grad is None or x.grad.abs().sum() == 0


def test_head_is_linear_then_dense_gelu():
    torch.manual_seed(0)
    head = VecoWordExchangeHead(6)
    h = torch.randn(2, 4, 6)
    w2, w3 = head.exchange_proj, head.dense
    expected = F.gelu(F.linear(F.linear(h, w2.weight, w2.bias), w3.weight, w3.bias))  # eqs. 6-7
    assert torch.equal(head(h), expected)  # the same F.linear calls on the same shapes: exact
    assert head(torch.randn(3, 6)).shape == (3, 6)
