"""veco-derived-transfer's math: the alignment score equals a brute-force count, Spearman's
ρ equals scipy's (and hand-computed values), Δ and the table, the TLM draw, bad flags."""

import itertools
import json
import math
import random

import pytest
import torch

from veco_plugin.cli import derived_transfer as cli
from veco_plugin.corpora.derived import MARKER
from veco_plugin.derived_transfer import report
from veco_plugin.derived_transfer import stages as st
from veco_plugin.derived_transfer.alignment_score import (
    aligned_mask,
    alignment_score,
    token_pairs,
)
from veco_plugin.derived_transfer.stages import split_lines
from veco_plugin.errors import VecoUserError


def brute_force(emb, english, copies):
    """The definition, one pair at a time with Python floats."""
    aligned = 0
    for i, e in enumerate(english):

        def cos(a, b):
            x, y = emb[a].tolist(), emb[b].tolist()
            dot = sum(p * q for p, q in zip(x, y))
            return dot / (math.sqrt(sum(p * p for p in x)) * math.sqrt(sum(q * q for q in y)))

        own = cos(e, copies[i])
        if all(own > cos(e, c) for j, c in enumerate(copies) if j != i):
            aligned += 1
    return aligned


@pytest.mark.parametrize("seed", range(5))
def test_alignment_score_equals_brute_force(seed):
    g = torch.Generator().manual_seed(seed)
    n, dim = 40, 8
    emb = torch.randn(2 * n + 5, dim, generator=g, dtype=torch.float64)
    # pull some copies towards their English row, so that the count is neither 0 nor n
    english = torch.arange(5, 5 + n)
    copies = torch.arange(5 + n, 5 + 2 * n)
    pulled = torch.rand(n, generator=g) < 0.5
    emb[copies[pulled]] = emb[english[pulled]] + 0.3 * emb[copies[pulled]]
    got = alignment_score(emb, english, copies)
    expected = brute_force(emb, english.tolist(), copies.tolist())
    assert got.aligned == expected and got.tokens == n
    assert 0 < expected < n
    assert got.score == expected / n
    # the chunked comparison is the whole one
    assert torch.equal(
        aligned_mask(emb, english, copies, chunk=7), aligned_mask(emb, english, copies)
    )


def test_a_tie_is_not_aligned_and_identical_copies_are():
    emb = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 0.0], [1.0, 0.0], [0.0, 3.0]])
    english, copies = torch.tensor([0, 1]), torch.tensor([2, 4])
    assert alignment_score(emb, english, copies).aligned == 2
    # another copy as close as its own: not aligned
    emb2 = torch.tensor([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    assert alignment_score(emb2, torch.tensor([0, 1]), torch.tensor([2, 3])).aligned == 0


def test_token_pairs_skip_specials_copies_and_tokens_that_never_occur():
    symbols = ["<s>", "<pad>", "</s>", "<unk>", "▁a", "b", "▁c", MARKER + "▁a", MARKER + "b",
               MARKER + "▁c", "<mask>"]  # fmt: skip
    english, copies = token_pairs(symbols, 4, occurring={4, 6, 7, 9, 10})
    assert english.tolist() == [4, 6] and copies.tolist() == [7, 9]


def test_average_ranks_and_spearman_by_hand():
    assert report.average_ranks([10, 20, 20, 5]) == [2.0, 3.5, 3.5, 1.0]
    assert report.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert report.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ranks x: 1 2 3 4 5, y: 2 1 4 3 5 -> d^2 = 4 -> 1 - 6*4/(5*24) = 0.8 (no ties)
    assert report.spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) == pytest.approx(0.8)
    assert report.spearman([1, 1, 1], [1, 2, 3]) is None
    assert report.spearman([1.0], [2.0]) is None


@pytest.mark.parametrize("seed", range(6))
def test_spearman_equals_scipy_with_ties(seed):
    stats = pytest.importorskip("scipy.stats")
    rng = random.Random(seed)
    x = [rng.choice([0.1, 0.2, 0.3, 0.5]) for _ in range(12)]
    y = [rng.randint(0, 5) for _ in range(12)]
    expected = stats.spearmanr(x, y).statistic
    assert report.spearman(x, y) == pytest.approx(expected, abs=1e-12)


def cells():
    values = itertools.count(1)
    return [
        report.Cell(t, o, o.upper(), 90.0 + next(values), 50.0 + 2 * next(values), a)
        for t, o, a in (("trans", "mlm", 0.1), ("trans", "align_mlm", 0.9),
                        ("trans_inv", "mlm", 0.05), ("trans_inv", "align_mlm", 0.8))
    ]  # fmt: skip


def test_table_math_and_files(tmp_path):
    cs = cells()
    text = report.write(str(tmp_path), cs, {"settings": {}}, ["a note"])
    payload = json.loads((tmp_path / "results.json").read_text())
    for c in cs:
        row = payload["table"][c.transform][c.objective]
        assert row["delta"] == pytest.approx(row["sup"] - row["zs"]) == pytest.approx(c.delta)
        assert row["alignment"] == c.alignment
    rho = report.spearman([c.alignment for c in cs], [c.sup - c.zs for c in cs])
    assert payload["spearman_alignment_delta"] == pytest.approx(rho)
    first = cs[0]
    assert f"| MLM | {first.sup:.1f} / {first.zs:.1f} / {first.delta:.1f} | 0.100 |" in text
    assert "T_trans∘T_inv: SUP / ZS / Δ" in text and "- a note" in text
    assert (tmp_path / "results.png").stat().st_size > 0


def test_tlm_pairs_are_a_quarter_of_the_train_lines_drawn_with_the_seed():
    train, valid, pairs = split_lines(1000, 50, 0.25, seed=3)
    assert list(valid) == list(range(950, 1000)) and len(train) == 950
    assert len(pairs) == round(0.25 * 950) and pairs == sorted(set(pairs))
    assert set(pairs) <= set(train)
    assert split_lines(1000, 50, 0.25, seed=3)[2] == pairs != split_lines(1000, 50, 0.25, 4)[2]
    assert len(split_lines(10, 50, 0.25, 1)[1]) == 5  # at most half the lines are valid


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--transforms", "inv"], "T_inv alone has no copies"),
        (["--objectives", "mlm,bert"], "unknown 'bert'"),
        (["--dictionary-coverage", "0"], "(0, 1]"),
        (["--tagged-test", "/nonexistent.conllu"], "--tagged-test /nonexistent.conllu: no such"),
        (["--jobs", "0"], "--jobs"),
        (["--text", "{empty}"], "{empty}: an empty file"),
        (["--updates", "-4"], "--updates -4"),
        (["--alpha", "-1"], "--alpha -1.0: ALIGN-MLM's weight, a finite number >= 0"),
        (["--alpha", "nan"], "--alpha nan:"),
    ],
)
def test_bad_flags_are_one_line_before_any_work(tmp_path, flags, message):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    flags = [f.format(empty=empty) for f in flags]
    message = message.format(empty=empty)
    fix = "tests/fixtures/udpos"
    base = ["--out", str(tmp_path / "run"), "--tagged-train", f"{fix}/train-en.excerpt.tsv",
            "--tagged-dev", f"{fix}/dev-en.excerpt.tsv",
            "--tagged-test", f"{fix}/en_ewt-ud-dev.excerpt.conllu"]  # fmt: skip
    args = cli.get_parser().parse_args(base + flags)
    with pytest.raises(VecoUserError, match=None) as exc:
        cli.config_from(args)
    assert message in str(exc.value)
    assert not (tmp_path / "run").exists()


def test_a_malformed_tag_file_names_its_line(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("The\tDET\nbroken\n\n", encoding="utf-8")
    fix = "tests/fixtures/udpos"
    args = cli.get_parser().parse_args(
        ["--out", str(tmp_path / "run"), "--tagged-train", str(bad),
         "--tagged-dev", f"{fix}/dev-en.excerpt.tsv",
         "--tagged-test", f"{fix}/en_ewt-ud-dev.excerpt.conllu"]
    )  # fmt: skip
    with pytest.raises(VecoUserError) as exc:
        cli.config_from(args)
    assert f"{bad}:2" in str(exc.value)


def test_alpha_reaches_align_mlm_alone(tmp_path):
    """--alpha is ALIGN-MLM's --align-weight; without it the criterion's (the paper's 10)."""
    fix = "tests/fixtures/udpos"
    base = ["--out", str(tmp_path / "run"), "--tagged-train", f"{fix}/train-en.excerpt.tsv",
            "--tagged-dev", f"{fix}/dev-en.excerpt.tsv",
            "--tagged-test", f"{fix}/en_ewt-ud-dev.excerpt.conllu"]  # fmt: skip
    given = cli.config_from(cli.get_parser().parse_args(base + ["--alpha", "100"]))
    default = cli.config_from(cli.get_parser().parse_args(base))
    command = st.pretrain(given, "trans_inv", "align_mlm").command
    assert command[command.index("--align-weight") + 1] == "100.0"
    for objective in ("mlm", "xlm", "dict_mlm", "dict_mlm_lid"):
        assert "--align-weight" not in st.pretrain(given, "trans_inv", objective).command
    assert "--align-weight" not in st.pretrain(default, "trans_inv", "align_mlm").command


def test_token_languages_put_each_copy_in_the_derived_language(tmp_path):
    joint = tmp_path / "dict.txt"
    joint.write_text(f"▁the 9\n{MARKER}▁the 9\n, 4\n{MARKER}, 4\n", encoding="utf-8")
    lines = st.token_languages(str(joint)).splitlines()
    assert lines == ["▁the en", f"{MARKER}▁the der", ", en", f"{MARKER}, der"]
