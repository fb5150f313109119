"""veco_plugin.evaluation.word_translation: the alignment score (nearest target word by
cosine of mean-of-pieces input embeddings) exactly on hand-built tables, and end to end
on a real word list, sentencepiece model and dictionary."""

import pytest
import torch
import torch.nn.functional as F

from tests.unit.test_bilingual_dictionary import gettext_lists, train_vocab  # noqa: F401
from veco_plugin.data.bilingual_dictionary import (
    ResolvedDictionary,
    encode_words,
    load_word_pairs,
)
from veco_plugin.evaluation.word_translation import (
    accuracy,
    build_task,
    word_translation_hits,
)

PAD = 1


def one_piece_list(pairs):
    """``(src id, tgt id)`` pairs as a resolved list of one-piece words ``s<id>``/``t<id>``."""
    words = [(f"s{s}", f"t{t}") for s, t in pairs]
    return ResolvedDictionary.from_pieces(words, [([s], [t]) for s, t in pairs], PAD)


def table_with(copies, size=80, dim=16, seed=0):
    """A random ``(size, dim)`` table in which row ``dst`` is a copy of row ``src`` for
    each ``dst: src`` of ``copies``."""
    table = torch.randn(size, dim, generator=torch.Generator().manual_seed(seed))
    for dst, src in copies.items():
        table[dst] = table[src]
    return table


def score(table, task):
    hits, queries = word_translation_hits(table, task)
    assert hits.dtype == queries.dtype == torch.long and hits.dim() == queries.dim() == 0
    return int(hits), int(queries)


def test_identical_translations_score_100_percent():
    heldout = one_piece_list([(10 + i, 40 + i) for i in range(10)])
    table = table_with({40 + i: 10 + i for i in range(10)})
    hits, queries = word_translation_hits(table, build_task(heldout))
    assert (int(hits), int(queries)) == (10, 10) and accuracy(hits, queries) == 100.0


def test_a_permuted_table_scores_its_fixed_points():
    perm = [0, 1, 2, 4, 5, 6, 7, 8, 9, 3]  # 3 fixed points of 10
    heldout = one_piece_list([(10 + i, 40 + i) for i in range(10)])
    table = table_with({40 + i: 10 + perm[i] for i in range(10)})
    hits, queries = word_translation_hits(table, build_task(heldout))
    assert (int(hits), int(queries)) == (3, 10) and accuracy(hits, queries) == 30.0


def test_candidates_include_the_other_lists_targets_and_ties_are_misses():
    # query 10 -> {40, 41}; 11 -> 42; 12 -> 43; training list targets 50, 51
    heldout = one_piece_list([(10, 40), (10, 41), (11, 42), (12, 43)])
    train = one_piece_list([(20, 50), (21, 51), (22, 41)])
    task = build_task(heldout, [train])
    assert task.query_words == ["s10", "s11", "s12"]
    assert task.candidate_words == ["t40", "t41", "t42", "t43", "t50", "t51"]
    assert task.gold.tolist() == [
        [True, True, False, False, False, False],
        [False, False, True, False, False, False],
        [False, False, False, True, False, False],
    ]
    # 10: its second translation is its copy -> hit; 11: a training target is its copy
    # -> miss; 12: its translation and a training target are both copies (tie) -> miss
    table = table_with({41: 10, 51: 11, 43: 12, 50: 12})
    assert score(table, task) == (1, 3)
    assert score(table_with({41: 10, 42: 11, 43: 12}), task) == (3, 3)


def test_a_multi_piece_word_is_the_mean_of_its_pieces():
    # target of query 10 has pieces 40, 41 whose mean is row 10 exactly
    heldout = ResolvedDictionary.from_pieces(
        [("s10", "t40_41"), ("s11", "t42")], [([10], [40, 41]), ([11], [42])], PAD
    )
    table = table_with({})
    table[41] = 2 * table[10] - table[40]
    table[42] = table[11] + 0.01 * table[12]
    assert score(table, build_task(heldout)) == (2, 2)
    table[41] = table[40]  # now the mean is row 40: a random direction
    assert score(table, build_task(heldout)) == (1, 2)


def test_collapsed_embeddings_score_zero():
    heldout = one_piece_list([(10 + i, 40 + i) for i in range(5)])
    assert score(torch.ones(80, 4), build_task(heldout)) == (0, 5)
    assert score(torch.zeros(80, 4), build_task(heldout)) == (0, 5)


def test_no_queries():
    empty = one_piece_list([])
    hits, queries = word_translation_hits(torch.randn(80, 4), build_task(empty))
    assert (int(hits), int(queries)) == (0, 0) and accuracy(hits, queries) == 0.0


def test_half_precision_table_scores_like_float():
    heldout = one_piece_list([(10 + i, 40 + i) for i in range(10)])
    table = table_with({40 + i: 10 + [0, 1, 2, 4, 3, 5, 6, 7, 8, 9][i] for i in range(10)})
    task = build_task(heldout)
    assert score(table.half(), task) == score(table, task) == (8, 10)


def test_a_real_word_list(gettext_lists, tmp_path):  # noqa: F811
    sp, dictionary = train_vocab(tmp_path)
    train_txt, heldout_txt = gettext_lists
    train = load_word_pairs(str(train_txt), sp, dictionary)
    heldout = load_word_pairs(str(heldout_txt), sp, dictionary)
    task = build_task(heldout, [train])
    assert len(task) == len(set(heldout.src_words)) > 0
    assert set(task.candidate_words) >= set(heldout.tgt_words) | set(train.tgt_words)
    assert len(task.candidate_words) == len({t for _, t in [*heldout.pieces(), *train.pieces()]})
    table = torch.randn(len(dictionary), 32, generator=torch.Generator().manual_seed(0))
    hits, queries = word_translation_hits(table, task)
    assert int(queries) == len(task) and 0 <= int(hits) <= int(queries)

    # the same score recomputed from the word strings, one word at a time
    def vector(word):
        (pieces,) = encode_words(sp, [word])
        return table.double()[[dictionary.index(p) for p in pieces]].mean(0)

    translations = {}
    for src, tgt in zip(heldout.src_words, heldout.tgt_words):
        translations.setdefault(src, set()).add(tgt)
    words = sorted(set(heldout.tgt_words) | set(train.tgt_words))
    vectors = torch.stack([vector(w) for w in words])
    expected = 0
    for src, gold in translations.items():
        cos = dict(zip(words, F.cosine_similarity(vector(src)[None], vectors).tolist()))
        best_gold = max(cos[w] for w in gold)
        expected += all(best_gold > c for w, c in cos.items() if w not in gold)
    assert int(hits) == expected


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")
def test_on_the_gpu_without_host_syncs():
    heldout = one_piece_list([(10 + i, 40 + i) for i in range(10)])
    table = table_with({40 + i: 10 + i for i in range(10)}).cuda()
    task = build_task(heldout).to("cuda")
    torch.cuda.set_sync_debug_mode("error")
    try:
        hits, queries = word_translation_hits(table, task)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert hits.is_cuda and (int(hits), int(queries)) == (10, 10)
