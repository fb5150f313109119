"""Every DDP backend fairseq offers synchronizes the objectives' gradients.

Two gloo ranks on CPU, different pairs per rank: after backward (and the wrapper's
all-reduce) the gradients are equal across ranks and equal to one process's
gradient on the union of the pairs (fairseq's wrappers average over ranks; the
criterion sums over tokens, so union = world_size x average)."""

import socket
import sys

import pytest
import torch

from tests.helpers.runner import REPO, env, start
from tests.helpers.toy import toy_dictionary
from veco_plugin.data.bilingual_dictionary import ResolvedDictionary, save_resolved

WORLD = 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _word_list(path) -> None:
    """A resolved word list over the toy vocabulary (a two-piece word included)."""
    d = toy_dictionary()
    pairs = [(("w1",), ("w2",)), (("w3",), ("w4", "w5")), (("w6",), ("w7",))]
    ids = [(tuple(map(d.index, s)), tuple(map(d.index, t))) for s, t in pairs]
    words = [(" ".join(s), " ".join(t)) for s, t in pairs]
    save_resolved(ResolvedDictionary.from_pieces(words, ids, d.pad()), str(path))


CASES = [
    ("pytorch_ddp", "ca_mlm"),
    ("c10d", "tlm"),  # find_unused_parameters: tlm leaves the cross-attention idle
    ("legacy_ddp", "ca_mlm"),
    ("no_c10d", "tlm"),
    # dwa: the pointer network idle on the rank without bilingual pairs
    ("pytorch_ddp", "dwa"),
    ("pytorch_ddp", "weam"),  # the exchange head through the TLM forward
    ("pytorch_ddp", "align_mlm"),  # L_ALIGN through the embed request
    ("pytorch_ddp", "dict_mlm"),  # inputs code-switched to translations
    ("pytorch_ddp", "tlm_lid"),  # XLM's language embeddings
]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    """OUT/BACKEND-CRITERION/rank{-1,0,1}.pt of every case: the two ranks and the
    one-process reference each run all cases in one process (one start-up each)."""
    out = tmp_path_factory.mktemp("ddp")
    _word_list(out / "words.tsv")
    port = _free_port()
    environ = env()  # one thread
    cases = [f"{backend}:{criterion}" for backend, criterion in CASES]
    argv = [sys.executable, "-m", "tests.helpers.ddp_worker", WORLD, port, out, *cases]
    procs = [start(argv[:3] + [r] + argv[3:], cwd=REPO, environ=environ) for r in range(-1, WORLD)]
    for p in procs:
        log = p.communicate(timeout=600)[0].decode(errors="replace")
        assert p.returncode == 0, log[-3000:]
    return out


@pytest.mark.parametrize("backend,criterion", CASES)
def test_gradients_are_synchronized(backend, criterion, ranks):
    case = ranks / f"{backend}-{criterion}"
    union, *grads = [torch.load(case / f"rank{r}.pt") for r in range(-1, WORLD)]
    assert grads[0].keys() == grads[1].keys()
    assert set(union) <= set(grads[0])
    for name, grad in grads[0].items():
        torch.testing.assert_close(grads[1][name], grad, rtol=0, atol=0, msg=name)
        expected = union.get(name, torch.zeros_like(grad))
        torch.testing.assert_close(WORLD * grad, expected, rtol=1e-4, atol=1e-6, msg=name)
    moved = [n for n, g in union.items() if g.abs().sum() > 0]
    assert len(moved) > 20
