"""veco-derived-transfer's math: the alignment score equals a brute-force count, Spearman's
ρ equals scipy's (and hand-computed values), Δ and the table, the TLM draw, bad flags."""

import dataclasses
import itertools
import json
import math
import random

import pytest
import torch

from tests.helpers.toy import model_args
from veco_plugin.cli import derived_transfer as cli
from veco_plugin.corpora.derived import MARKER
from veco_plugin.derived_transfer import curve, report
from veco_plugin.derived_transfer import stages as st
from veco_plugin.derived_transfer.alignment_score import (
    SAMPLE,
    aligned_mask,
    alignment_score,
    sample_rows,
    score_checkpoint,
    token_pairs,
)
from veco_plugin.derived_transfer.stages import split_lines
from veco_plugin.errors import VecoUserError


def brute_marks(emb, english, copies):
    """The definition, one pair at a time with Python floats: per English token, whether
    its own copy is strictly the most similar of ``copies``."""

    def cos(a, b):
        x, y = emb[a].tolist(), emb[b].tolist()
        dot = sum(p * q for p, q in zip(x, y))
        return dot / (math.sqrt(sum(p * p for p in x)) * math.sqrt(sum(q * q for q in y)))

    marks = []
    for i, e in enumerate(english):
        own = cos(e, copies[i])
        marks.append(all(own > cos(e, c) for j, c in enumerate(copies) if j != i))
    return marks


def brute_force(emb, english, copies):
    return sum(brute_marks(emb, english, copies))


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
    # fp32 matmul there, Python float64 here: the counts are exact because no own copy is
    # within rounding of its best rival (measured over the seeds: >= 5.7e-3 apart)
    expected = brute_force(emb, english.tolist(), copies.tolist())
    assert got.aligned == expected and got.tokens == n
    assert 0 < expected < n
    assert got.score == expected / n
    # the chunked comparison is the whole one (other matmul shapes: exact by the same gap)
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
    english, copies = token_pairs(symbols, 4)  # the whole vocabulary
    assert english.tolist() == [4, 5, 6] and copies.tolist() == [7, 8, 9]


def test_scoring_a_sample_of_rows_is_the_whole_mask_at_those_rows():
    g = torch.Generator().manual_seed(3)
    emb = torch.randn(60, 6, generator=g)
    english, copies = torch.arange(4, 32), torch.arange(32, 60)
    emb[copies[::2]] = emb[english[::2]] + 0.2 * emb[copies[::2]]
    rows = sample_rows(len(english), SAMPLE, seed=1)
    assert len(rows) == round(0.4 * 28) and len(set(rows.tolist())) == len(rows)
    assert torch.equal(rows, sample_rows(len(english), SAMPLE, seed=1))
    whole = aligned_mask(emb, english, copies)
    # chunks of 3 vs the whole matrix: exact, no own copy is within rounding of its best
    # rival (measured: >= 0.13 apart)
    assert torch.equal(aligned_mask(emb, english, copies, chunk=3, rows=rows), whole[rows])


def write_checkpoint(path, emb, languages=None, token_language=None):
    """A fairseq-shaped checkpoint holding only the input embeddings (and language
    vectors): what the score reads."""
    model = {"encoder.sentence_encoder.embed_tokens.weight": emb}
    if languages is not None:
        model["encoder.sentence_encoder.embed_tokens.languages.weight"] = languages
        model["encoder.sentence_encoder.embed_tokens.token_language"] = token_language
    history = [{"criterion_name": "masked_lm", "lr_scheduler_state": {}, "num_updates": 0}]
    state = {"model": model, "args": model_args("veco_tiny"), "cfg": None}
    torch.save({**state, "optimizer_history": history, "extra_state": {}}, path)


def test_score_checkpoint_splits_by_the_dictionary_and_adds_language_vectors(tmp_path):
    """Whole vocabulary, dictionary / outside, occurring and language-vector scores,
    each the brute-force count over its tokens."""
    words = [f"▁w{i}" for i in range(12)]
    symbols = words + [MARKER + w for w in words]
    (tmp_path / "dict.txt").write_text("".join(f"{s} 1\n" for s in symbols), encoding="utf-8")
    (tmp_path / "bilingual.txt").write_text(
        "".join(f"{w} {MARKER}{w}\n" for w in words[:5]), encoding="utf-8"
    )
    (tmp_path / "train.en").write_text(" ".join(words[:8]) + "\n", encoding="utf-8")
    vocab = 4 + len(symbols) + 1  # specials, symbols, <mask>
    g = torch.Generator().manual_seed(0)
    emb = torch.randn(vocab, 8, generator=g, dtype=torch.float64)
    english, copies = torch.arange(4, 16), torch.arange(16, 28)
    emb[copies[::3]] = emb[english[::3]] + 0.3 * emb[copies[::3]]  # some aligned
    write_checkpoint(tmp_path / "plain.pt", emb)
    args = (str(tmp_path / "dict.txt"), [str(tmp_path / "train.en")],
            str(tmp_path / "bilingual.txt"), 5)  # fmt: skip
    result = score_checkpoint(str(tmp_path / "plain.pt"), *args)
    e, c = english.tolist(), copies.tolist()
    whole = brute_force(emb, e, c)
    assert result["vocabulary"] == {"score": whole / 12, "aligned": whole, "tokens": 12}
    marks = brute_marks(emb, e, c)
    inside = sum(marks[:5])  # w0-w4: the dictionary's English side
    assert 0 < inside < whole < 12  # aligned tokens on both sides of the split
    assert result["dictionary"]["tokens"] == 5 and result["dictionary"]["aligned"] == inside
    assert result["outside"]["aligned"] == whole - inside and result["outside"]["tokens"] == 7
    assert result["occurring"]["aligned"] == brute_force(emb, e[:8], c[:8])
    assert "languages" not in result

    languages = torch.randn(3, 8, generator=g, dtype=torch.float64)
    languages[2] = 0  # the none row
    token_language = torch.full((vocab,), 2)
    token_language[english], token_language[copies] = 0, 1
    write_checkpoint(tmp_path / "lid.pt", emb, languages, token_language)
    result = score_checkpoint(str(tmp_path / "lid.pt"), *args)
    rows = sample_rows(12, SAMPLE, 5).tolist()
    shifted = emb + languages[token_language]
    expected = sum(brute_marks(shifted, e, c)[i] for i in rows)
    assert result["languages"] == {"score": expected / len(rows), "aligned": expected,
                                   "tokens": len(rows)}  # fmt: skip
    assert result["sampled_rows"]["aligned"] == sum(marks[i] for i in rows)
    assert result["vocabulary"]["aligned"] == whole  # the token rows alone


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
    cs = [
        dataclasses.replace(c, sup_accuracy=c.sup + 1, zs_accuracy=c.zs + 3,
                            alignment_dictionary=0.5, alignment_outside=0.25,
                            alignment_tuned=0.125)  # fmt: skip
        for c in cells()
    ]
    cs[1] = dataclasses.replace(cs[1], alignment_languages=0.75, alignment_sampled=0.5)
    text = report.write(str(tmp_path), cs, {"settings": {}}, ["a note"])
    payload = json.loads((tmp_path / "results.json").read_text())
    assert payload["metric"] == "f1"
    for c in cs:
        row = payload["table"][c.transform][c.objective]
        assert row["delta"] == pytest.approx(row["sup"] - row["zs"]) == pytest.approx(c.delta)
        assert row["delta_accuracy"] == pytest.approx(c.delta - 2)
        assert row["alignment"] == c.alignment and row["alignment_tuned"] == 0.125
    rho = report.spearman([c.alignment for c in cs], [c.sup - c.zs for c in cs])
    assert payload["spearman_alignment_delta"] == pytest.approx(rho)
    first = cs[0]
    delta_acc = f"{first.delta_accuracy:.1f}"
    assert f"| MLM | {first.sup:.1f} / {first.zs:.1f} / {first.delta:.1f} | {delta_acc} |" in text
    assert "| T_trans | MLM | 10.0 | 50.0 | 25.0 | 12.5 | - | - |" in text
    assert "| T_trans | ALIGN_MLM | 90.0 | 50.0 | 25.0 | 12.5 | 75.0 | 50.0 |" in text
    assert "T_trans∘T_inv: SUP / ZS / Δ (F1)" in text and "- a note" in text
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
        (["--curve", "1000,500"], "--curve 1000,500: give ascending update counts"),
        (["--curve", "1000,2520"], "each a positive multiple of 50"),
        (["--curve", "1k"], "--curve 1k:"),
        (["--curve", "100", "--updates", "100"], "with --updates 100: give one of the two"),
        (["--transforms", "trans_syn"], "give --syn-treebank FILE.conllu"),
        (
            [
                "--transforms",
                "trans,trans_syn",
                "--syn-treebank",
                "tests/fixtures/udpos/" "fr_gsd-ud-test.excerpt.cols.conllu",
            ],
            "T_syn re-orders dependency trees",
        ),
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
    for objective in ("mlm", "xlm", "dict_mlm", "dict_mlm_syn", "dict_mlm_lid"):
        assert "--align-weight" not in st.pretrain(given, "trans_inv", objective).command
    assert "--align-weight" not in st.pretrain(default, "trans_inv", "align_mlm").command


def test_dict_mlm_runs_code_switched_and_the_synonym_row_names_its_mode(tmp_path):
    fix = "tests/fixtures/udpos"
    args = ["--out", str(tmp_path / "run"), "--tagged-train", f"{fix}/train-en.excerpt.tsv",
            "--tagged-dev", f"{fix}/dev-en.excerpt.tsv",
            "--tagged-test", f"{fix}/en_ewt-ud-dev.excerpt.conllu"]  # fmt: skip
    cfg = cli.config_from(cli.get_parser().parse_args(args))
    assert cfg.objectives == ("mlm", "xlm_lid", "dict_mlm_lid", "align_mlm")  # the authors'
    assert cli.recipe_note(cfg).startswith("POS fine-tuning: lr 0.0005, 3 epochs, batch 32")
    for objective, mode in (("dict_mlm", "code_switch"), ("dict_mlm_lid", "code_switch"),
                            ("dict_mlm_syn", "synonym_target")):  # fmt: skip
        command = st.pretrain(cfg, "trans", objective).command
        assert command[command.index("--dict-mlm-mode") + 1] == mode
        assert command[command.index("--criterion") + 1] == "dict_mlm"
    # the fine-tuning: no model selection, the last epoch's model scored on the derived dev
    finetune, align, test = st.finetune_stages(cfg, "trans", "mlm", "en")
    assert "--disable-validation" in finetune.command and align.name == "align-trans-mlm-zs"
    assert test.command[test.command.index("--test") + 1].endswith("/trans/pos-dev.tsv")
    assert test.command[test.command.index("--checkpoint") + 1].endswith("checkpoint_last.pt")
    assert [s.name for s in st.finetune_stages(cfg, "trans", "mlm", "der")] == [
        "finetune-trans-mlm-sup", "test-trans-mlm-sup"]  # fmt: skip


def test_token_languages_put_each_copy_in_the_derived_language(tmp_path):
    joint = tmp_path / "dict.txt"
    joint.write_text(f"▁the 9\n{MARKER}▁the 9\n, 4\n{MARKER}, 4\n", encoding="utf-8")
    lines = st.token_languages(str(joint)).splitlines()
    assert lines == ["▁the en", f"{MARKER}▁the der", ", en", f"{MARKER}, der"]


def test_a_curve_scores_the_model_at_every_budget(tmp_path):
    """--curve: one pre-training continued to each budget, then per budget the model kept
    there aligned, fine-tuned and tested under its own name."""
    fix = "tests/fixtures/udpos"
    args = ["--out", str(tmp_path / "run"), "--tagged-train", f"{fix}/train-en.excerpt.tsv",
            "--tagged-dev", f"{fix}/dev-en.excerpt.tsv",
            "--tagged-test", f"{fix}/en_ewt-ud-dev.excerpt.conllu",
            "--transforms", "trans", "--objectives", "mlm", "--curve", "100,250"]  # fmt: skip
    cfg = cli.config_from(cli.get_parser().parse_args(args))
    assert cfg.curve == (100, 250) and cfg.updates == 250
    (pipeline,) = st.pipelines(cfg)
    names = [s.name for s in pipeline]
    assert names[0] == "pretrain-trans-mlm" and names.count("pretrain-trans-mlm") == 1
    for b in (100, 250):
        for name in (f"align-trans-mlm-u{b}", f"finetune-trans-mlm-u{b}-zs",
                     f"align-trans-mlm-u{b}-zs", f"test-trans-mlm-u{b}-sup"):  # fmt: skip
            assert name in names
        finetune = next(s for s in pipeline if s.name == f"finetune-trans-mlm-u{b}-sup")
        assert any(a.endswith(f"checkpoint_u{b}.pt") for a in finetune.command)
    pretrain = pipeline[0].command
    assert pretrain[pretrain.index("--max-update") + 1] == "250"
    assert pretrain[pretrain.index("--log-interval") + 1] == str(curve.LOG_INTERVAL)


def test_curve_progress_sums_the_logged_tokens_and_takes_a_resumed_runs_later_record(tmp_path):
    log = tmp_path / "pretrain.log"
    record = "2026-11-27 10:00:00 | INFO | train_inner | "
    rows = [(50, 1000.0, 0.1), (100, 2000.0, 0.2), (100, 3000.0, 0.25), (150, 500.0, 0.3)]
    lines = ["| INFO | fairseq_cli.train | not a record", record + "{broken"]
    lines += [record + json.dumps({"epoch": 1, "update": e, "wpb": str(w), "num_updates": str(n)})
              for n, w, e in rows]  # fmt: skip
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    progress = curve.read_progress(str(log))
    assert sorted(progress) == [50, 100, 150]
    assert progress[100] == curve.Progress(50 * 1000.0 + 50 * 3000.0, 0.25)
    assert progress[150].tokens == 50 * 1000.0 + 50 * 3000.0 + 50 * 500.0

    cells_ = [dataclasses.replace(c, transform="trans", label="MLM", sup=90.0, zs=90.0 - d)
              for c, d in zip(cells()[:2], (30.0, 8.0))]  # fmt: skip
    points = [curve.Point(100, cells_[0], progress[100]), curve.Point(150, cells_[1], None)]
    text = curve.write(str(tmp_path), points, {"settings": {}}, ["a note"])
    assert "| T_trans | MLM | 100 | 0.2 | 0.25 | 90.0 / 60.0 / 30.0 |" in text
    assert "| T_trans | MLM | 150 | - | - | 90.0 / 82.0 / 8.0 |" in text
    assert "T_trans, MLM: Δ falls below 10 at 150 updates" in text
    payload = json.loads((tmp_path / "curve.json").read_text())
    assert [p["tokens"] for p in payload["points"]] == [200000.0, None]
    assert (tmp_path / "curve.png").stat().st_size > 0


def test_trans_syn_reads_trees_everywhere_and_the_authors_recipe(tmp_path):
    """With trans_syn every row pre-trains on the trees' words (one text for all), derive
    gets the trees and the French treebanks; --finetune-recipe authors is their POS run."""
    fix = "tests/fixtures/udpos"
    conllu = f"{fix}/en_ewt-ud-dev.excerpt.conllu"
    french = f"{fix}/fr_gsd-ud-dev.excerpt.cols.conllu"
    args = ["--out", str(tmp_path / "run"), "--text", conllu, "--tagged-train", conllu,
            "--tagged-dev", conllu, "--tagged-test", conllu, "--syn-treebank", french,
            "--transforms", "trans,trans_inv,trans_syn",
            "--finetune-recipe", "authors"]  # fmt: skip
    cfg = cli.config_from(cli.get_parser().parse_args(args))
    assert cfg.syn and cfg.syn_treebanks == (french,)
    derive = st.derive(cfg).command
    assert derive[derive.index("--text") + 1].endswith("corpus/text.conllu")
    assert derive[derive.index("--syn-treebank") + 1] == french
    assert "trans,trans_inv,trans_syn" in derive
    s = cfg.finetune
    assert (s.lr, s.epochs, s.batch_size, s.max_length, cfg.max_pos_train) == (2e-5, 10, 32, 512, 0)
    assert cli.recipe_note(cfg).endswith("(the authors')")
    assert st.stage_names(cfg)[-1] == "test-trans_syn-align_mlm-sup"


class _Echo:
    """The corpus stage's context: what it echoes, kept."""

    def __init__(self) -> None:
        self.lines: list = []

    def echo(self, text: str) -> None:
        self.lines.append(text)


def test_a_conllu_text_is_its_trees_words_with_or_without_trans_syn(tmp_path):
    """A *.conllu --text pre-trains on its trees' words with any transformations (it was read
    as raw CoNLL-U lines without trans_syn), so rows measured in separate runs share a text."""
    fix = "tests/fixtures/udpos"
    conllu = f"{fix}/en_ewt-ud-dev.excerpt.conllu"
    tagged = ["--tagged-train", conllu, "--tagged-dev", conllu, "--tagged-test", conllu]
    texts = {}
    for transforms, extra in (
        ("trans_inv", []),
        ("trans,trans_syn", ["--syn-treebank", f"{fix}/fr_gsd-ud-dev.excerpt.cols.conllu"]),
    ):
        out = tmp_path / transforms
        args = ["--out", str(out), "--text", conllu, *tagged, "--transforms", transforms, *extra]
        cfg = cli.config_from(cli.get_parser().parse_args(args))
        st.corpus(cfg).body(_Echo())
        texts[transforms] = (out / "corpus" / st.TEXT).read_text(encoding="utf-8")
    assert texts["trans_inv"] == texts["trans,trans_syn"]
    first = texts["trans_inv"].splitlines()[0]
    assert "\t" not in first and not first.startswith("#")  # words, not CoNLL-U rows
