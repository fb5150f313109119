"""veco-aer on hand-made gold standards whose scores are computed by hand below.

The corpus: 3 sentence pairs, source "a b c" / "d e f g" / "h i", target "A B C" /
"D E F" / "H I". Gold (0-based; S sure, P possible-only; P of AER = S plus these):

    pair 1: S {0-0, 1-1}  P-only {2-2}
    pair 2: S {0-0, 3-2}  P-only {1-1, 2-1}
    pair 3: S {1-0}
    |S| = 5, |P| = 3 + 4 + 1 = 8

Prediction PRED:

    pair 1: 0-0 (sure)  2-2 (possible-only)  1-2 (wrong)
    pair 2: 0-0 (sure)  1-1 (possible-only)
    pair 3: 1-0 (sure)  0-1 (wrong)
    |A| = 7, |A ∩ S| = 3, |A ∩ P| = 3 + 2 = 5

    precision = |A ∩ P| / |A| = 5/7                          = 71.428...% -> 71.43
    recall    = |A ∩ S| / |S| = 3/5                          = 60.00
    f1        = 2 (5/7)(3/5) / (5/7 + 3/5) = (6/7) / (46/35) = 15/23 = 65.217...% -> 65.22
    aer       = 1 - (3 + 5) / (7 + 5) = 1 - 8/12 = 1/3       = 33.333...% -> 33.33
"""

import os
from fractions import Fraction

import pytest

from veco_plugin.cli.aer import cli_main
from veco_plugin.errors import VecoUserError
from veco_plugin.evaluation.aer import (
    AerCounts,
    aer_scores,
    count_links,
    evaluate_files,
    format_scores,
    parse_naacl_gold,
    parse_pharaoh_gold,
    percent,
    read_lines,
)

SRC = "a b c\nd e f g\nh i\n"
TGT = "A B C\nD E F\nH I\n"
GOLD_PHARAOH = "0-0 1-1 2p2\n0-0 3-2 1p1 2p1\n1-0\n"
# the same gold in NAACL/WPT form: 1-based, every optional-field variant, any order
GOLD_NAACL = (
    "1 1 1 S\n"
    "1 2 2\n"
    "1 3 3 P\n"
    "2 4 3 S 0.9\n"
    "2 1 1 1\n"
    "2 2 2 P 0.5\n"
    "2 3 2 P\n"
    "3 2 1\n"
)
PRED = "0-0 2-2 1-2\n0-0 1-1\n1-0 0-1\n"
COUNTS = "sentences 3 gold sure 5 possible 8 predicted 7 matched sure 3 possible 5"
SCORES = "precision 71.43 recall 60.00 f1 65.22 aer 33.33"


@pytest.fixture
def files(tmp_path):
    """Write ``name=text`` files into a temp dir and return their paths."""

    def write(**texts):
        paths = []
        for name, text in texts.items():
            path = tmp_path / name
            path.write_text(text, encoding="utf-8")
            paths.append(str(path))
        return paths if len(paths) > 1 else paths[0]

    return write


def run(argv, capsys):
    """Run ``veco-aer argv`` in-process; its stdout lines."""
    return run_and_warn(argv, capsys)[0]


def run_and_warn(argv, capsys):
    """Run ``veco-aer argv`` in-process; its stdout lines and its warning lines."""
    cli_main(list(argv))
    out, err = capsys.readouterr()
    return out.splitlines(), [line for line in err.splitlines() if " | WARNING | " in line]


def error(argv, capsys) -> str:
    """Run ``veco-aer argv``, expecting a user error; its one-line message.

    ``run_cli`` prints the message to stderr and exits with status 1, no traceback.
    """
    with pytest.raises(SystemExit) as exc:
        cli_main(list(argv))
    assert exc.value.code == 1
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if " | INFO | " not in line]
    assert out == "" and len(lines) == 1, err
    message = lines[0]
    assert message.startswith("veco-aer: error: "), message
    return message


# scores


def test_hand_computed_scores_pharaoh_gold(files, capsys):
    gold, pred = files(gold=GOLD_PHARAOH, pred=PRED)
    assert run([gold, pred], capsys) == [COUNTS, SCORES]


def test_naacl_gold_of_the_same_content_scores_the_same(files, capsys):
    gold, pred = files(gold=GOLD_NAACL, pred=PRED)
    assert run([gold, pred, "--gold-format", "naacl"], capsys)[-1] == SCORES
    naacl = parse_naacl_gold(GOLD_NAACL.splitlines(), "g")
    assert naacl == parse_pharaoh_gold(GOLD_PHARAOH.splitlines(), "g")
    assert naacl.left_out == []


def test_src_tgt_in_range_do_not_change_scores(files, capsys):
    gold, naacl, pred, src, tgt = files(
        gold=GOLD_PHARAOH, naacl=GOLD_NAACL, pred=PRED, src=SRC, tgt=TGT
    )
    assert run([gold, pred, "--src", src, "--tgt", tgt], capsys)[-1] == SCORES
    argv = [naacl, pred, "--gold-format", "naacl", "--src", src, "--tgt", tgt]
    assert run(argv, capsys)[-1] == SCORES


def test_one_based_predictions(files, capsys):
    one_based = "1-1 3-3 2-3\n1-1 2-2\n2-1 1-2\n"
    gold, pred, src, tgt = files(gold=GOLD_PHARAOH, pred=one_based, src=SRC, tgt=TGT)
    argv = [gold, pred, "--one-based-pred", "--src", src, "--tgt", tgt]
    assert run(argv, capsys)[-1] == SCORES


def test_perfect_predictions_have_aer_zero(files, capsys):
    # only the sure links: precision 5/5, recall 5/5, aer 1 - (5 + 5) / (5 + 5) = 0
    gold, sure = files(gold=GOLD_PHARAOH, sure="0-0 1-1\n0-0 3-2\n1-0\n")
    assert run([gold, sure], capsys)[-1] == "precision 100.00 recall 100.00 f1 100.00 aer 0.00"
    # every possible link: precision 8/8, recall 5/5, aer 1 - (5 + 8) / (8 + 5) = 0
    every = files(every="0-0 1-1 2-2\n0-0 3-2 1-1 2-1\n1-0\n")
    assert run([gold, every], capsys)[-1] == "precision 100.00 recall 100.00 f1 100.00 aer 0.00"


def test_empty_prediction_lines(files, capsys):
    gold, empty, partly = files(gold=GOLD_PHARAOH, empty="\n\n\n", partly="0-0 1-1\n\n\n")
    # |A| = 0: precision 0 by definition, recall 0/5, aer 1 - 0/5 = 1
    lines = run([gold, empty], capsys)
    assert lines == [
        "sentences 3 gold sure 5 possible 8 predicted 0 matched sure 0 possible 0",
        "precision 0.00 recall 0.00 f1 0.00 aer 100.00",
    ]
    # pairs 2 and 3 empty: precision 2/2, recall 2/5, f1 2 (2/5) / (7/5) = 4/7 = 57.142..%,
    # aer 1 - (2 + 2) / (2 + 5) = 3/7 = 42.857..%
    assert run([gold, partly], capsys)[-1] == "precision 100.00 recall 40.00 f1 57.14 aer 42.86"


def test_naacl_sentence_numbers_are_labels_in_ascending_order(files, capsys):
    # labels 7 and 30 (7 listed last): pair 1 is label 7 {S 0-0, P 1-1}, pair 2 label 30
    # {S 1-0}. Prediction: pair 1 0-0 1-1, pair 2 1-0 0-0 (wrong).
    # |S| = 2, |P| = 3, |A| = 4, |A ∩ S| = 2, |A ∩ P| = 3:
    # precision 3/4, recall 2/2, f1 2 (3/4) / (7/4) = 6/7 = 85.714..%,
    # aer 1 - (2 + 3) / (4 + 2) = 1/6 = 16.666..%
    gold, pred = files(gold="30 2 1\n07 1 1\n7 2 2 P\n", pred="0-0 1-1\n1-0 0-0\n")
    assert run([gold, pred, "--gold-format", "naacl"], capsys) == [
        "sentences 2 gold sure 2 possible 3 predicted 4 matched sure 2 possible 3",
        "precision 75.00 recall 100.00 f1 85.71 aer 16.67",
    ]


def test_naacl_one_label_per_line_of_src_tgt(files, capsys):
    # 2 labels but --src/--tgt have 3 lines: which line has no gold links is unknowable
    gold, pred, src, tgt = files(gold="1 1 1\n2 1 1\n", pred="0-0\n0-0\n\n", src=SRC, tgt=TGT)
    argv = [gold, pred, "--gold-format", "naacl", "--src", src, "--tgt", tgt]
    message = error(argv, capsys)
    assert f"{gold} labels 2 sentence pairs (2 distinct sentence_no, 1..2) but" in message
    assert (
        "--src/--tgt have 3 lines; the k-th smallest sentence_no is line k of --src/--tgt"
        in message
    )


def test_duplicate_links_count_once_and_sure_wins_over_possible(files, capsys):
    # pair 1: 0-0 both sure and possible -> sure; the prediction lists 0-0 twice
    gold, pred = files(gold="0-0 0p0 1p1\n", pred="0-0 0-0\n")
    assert run([gold, pred], capsys) == [
        "sentences 1 gold sure 1 possible 2 predicted 1 matched sure 1 possible 1",
        "precision 100.00 recall 100.00 f1 100.00 aer 0.00",
    ]


def test_degenerate_counts_never_divide_by_zero():
    nothing = aer_scores(AerCounts())
    assert format_scores(nothing) == "precision 0.00 recall 0.00 f1 0.00 aer 100.00"
    # only possible links in the gold: recall has no denominator -> 0
    no_sure = aer_scores(AerCounts(1, 0, 2, 2, 0, 2))
    assert (no_sure.precision, no_sure.recall, no_sure.f1) == (1, 0, 0)
    assert no_sure.aer == 0  # 1 - (0 + 2) / (2 + 0)


def test_percent_rounds_the_exact_value_half_up():
    assert percent(Fraction(1, 32)) == "3.13"  # 3.125 exactly (float formatting says 3.12)
    assert percent(Fraction(2, 3)) == "66.67"
    assert percent(Fraction(1)) == "100.00"
    assert percent(Fraction(0)) == "0.00"


def test_count_links_is_micro_averaged():
    gold = parse_pharaoh_gold(["0-0", "0-0 1-1 2-2 3-3"], "g").sentences
    counts = count_links(gold, [frozenset({(0, 0)}), frozenset({(0, 0)})])
    # per-sentence recall would average 1 and 1/4 to 5/8; the corpus recall is 2/5
    assert aer_scores(counts).recall == Fraction(2, 5)


# errors: one line naming the file, the line and the fix


@pytest.mark.parametrize(
    "text, expected",
    [
        ("0-0\n0-x\n\n", ":2: malformed link '0-x'"),
        ("0-0\n0:1\n\n", ":2: malformed link '0:1'"),
        ("0-0\n\n1p0\n", ":3: possible-link notation '1p0' is for gold files only"),
        ("0-0\n-1-0\n\n", ":2: link '-1-0' has index -1"),
    ],
)
def test_malformed_predictions(files, text, expected, capsys):
    gold, pred = files(gold=GOLD_PHARAOH, pred=text)
    message = error([gold, pred], capsys)
    assert f"{pred}{expected}" in message


def test_zero_index_in_one_based_predictions(files, capsys):
    gold, pred = files(gold=GOLD_PHARAOH, pred="1-1\n2-0\n\n")
    message = error([gold, pred, "--one-based-pred"], capsys)
    assert f"{pred}:2: link '2-0' has index 0" in message and "--one-based-pred" in message


@pytest.mark.parametrize(
    "text, expected",
    [
        ("0-0\n1-x\n\n", ":2: malformed link '1-x'"),
        ("0-0\n1:1\n\n", ":2: malformed link '1:1'"),
    ],
)
def test_malformed_pharaoh_gold(files, text, expected, capsys):
    gold, pred = files(gold=text, pred=PRED)
    assert f"{gold}{expected}" in error([gold, pred], capsys)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1 1 1\n1 1\n", ":2: malformed line '1 1': expected 3 to 5 fields"),
        ("1 1 1\n1 a 1\n", ":2: malformed line '1 a 1': position_L1 'a' is not an integer"),
        ("-1 1 1\n", ":1: sentence_no is -1 in '-1 1 1'; a sentence_no is a label >= 0"),
        ("1 1 1 X\n", ":1: malformed line '1 1 1 X': after the link only S or P"),
        ("1 1 1 S 2\n", ":1: malformed line '1 1 1 S 2'"),  # confidence beyond (0, 1]
        ("1 1 1 0.5 S\n", ":1: malformed line '1 1 1 0.5 S'"),  # fields swapped
    ],
)
def test_malformed_naacl_gold(files, text, expected, capsys):
    gold, pred = files(gold=text, pred="\n")
    message = error([gold, pred, "--gold-format", "naacl"], capsys)
    assert f"{gold}{expected}" in message


def test_sentence_count_mismatch_says_both_counts(files, capsys):
    gold, pred = files(gold=GOLD_PHARAOH, pred="0-0\n0-0\n")
    message = error([gold, pred], capsys)
    assert f"{pred} has 2 lines but {gold} has 3 sentence pairs" in message


def test_naacl_prediction_with_more_lines_than_labels(files, capsys):
    gold, pred = files(gold=GOLD_NAACL, pred=PRED + "0-0\n")
    message = error([gold, pred, "--gold-format", "naacl"], capsys)
    assert f"{pred} has 4 lines but {gold} has 3 sentence pairs (one per distinct " in message


def test_out_of_range_predicted_link_with_src_tgt(files, capsys):
    # pair 3 has 2 source and 2 target words: index 2 is past its end
    gold, pred, src, tgt = files(gold=GOLD_PHARAOH, pred="0-0\n0-0\n0-0 1-2\n", src=SRC, tgt=TGT)
    message = error([gold, pred, "--src", src, "--tgt", tgt], capsys)
    assert f"{pred}:3: link '1-2' is out of range" in message
    assert "sentence pair 3 has 2 source and 2 target words" in message
    assert "--one-based-pred" in message


@pytest.mark.parametrize(
    "gold_format, text, with_src, expected",
    [
        # pair 3 has 2 source and 2 target words: 2p0 and '3 3 1' are past its end
        ("pharaoh", "0-0\n0-0\n2p0\n", True, "line 3 '2p0': it has 2 source and 2 target"),
        ("pharaoh", "0-0\n1--1\n\n", False, "line 2 '1--1': word positions start at 0"),
        (
            "naacl",
            GOLD_NAACL + "3 3 1 P\n",
            True,
            "line 9 '3 3 1', sentence_no 3 = line 3 of --src/--tgt: it has 2 source and 2 target",
        ),
        ("naacl", GOLD_NAACL + "2 0 1\n", False, "line 9 '2 0 1', sentence_no 2: word positions"),
    ],
)
def test_gold_links_outside_their_sentence_are_left_out_with_one_warning(
    files, gold_format, text, with_src, expected, capsys
):
    gold, pred, src, tgt = files(gold=text, pred=PRED, src=SRC, tgt=TGT)
    argv = [gold, pred, "--gold-format", gold_format] + (["--src", src, "--tgt", tgt] * with_src)
    out, warnings = run_and_warn(argv, capsys)
    # the stray link is left out of S and P: the scores are those without it
    if gold_format == "naacl":
        assert out[-1] == SCORES
    assert len(warnings) == 1, warnings
    assert f"{gold}: left out 1 gold link outside its sentence (first: {expected}" in warnings[0]
    assert ("give --src/--tgt to check their ends too" in warnings[0]) != with_src


def test_out_of_range_is_not_detected_without_src_tgt(files, capsys):
    gold, pred = files(gold=GOLD_PHARAOH, pred="0-0\n0-0\n9-9\n")
    assert run([gold, pred], capsys)[-1].startswith("precision ")


def test_src_tgt_count_mismatches(files, capsys):
    gold, pred, src, tgt, short = files(
        gold=GOLD_PHARAOH, pred=PRED, src=SRC, tgt=TGT, short="A B C\nD E F\n"
    )
    message = error([gold, pred, "--src", src, "--tgt", short], capsys)
    assert f"--src {src} has 3 lines but --tgt {short} has 2" in message
    short_src = files(short_src="a b c\nd e f g\n")
    message = error([gold, pred, "--src", short_src, "--tgt", short], capsys)
    assert f"{gold} has 3 lines but --src/--tgt have 2" in message
    naacl = files(naacl=GOLD_NAACL)
    argv = [naacl, pred, "--gold-format", "naacl", "--src", short_src, "--tgt", short]
    message = error(argv, capsys)
    assert f"{naacl} labels 3 sentence pairs (3 distinct sentence_no, 1..3) but" in message
    assert "--src/--tgt have 2 lines" in message
    assert "--src and --tgt go together" in error([gold, pred, "--src", src], capsys)


def test_missing_file(files, tmp_path, capsys):
    gold = files(gold=GOLD_PHARAOH)
    missing = str(tmp_path / "missing.align")
    assert error([gold, missing], capsys) == f"veco-aer: error: {missing}: no such file"


def test_an_empty_gold_file_is_one_line(tmp_path):
    """An empty gold file scored nothing and 'succeeded' with AER 100."""
    gold, pred = tmp_path / "gold", tmp_path / "pred"
    gold.write_text("")
    pred.write_text("0-0\n")
    with pytest.raises(VecoUserError, match=f"{gold} is empty: give the gold alignments"):
        evaluate_files(str(gold), str(pred))


def test_read_lines_drops_line_ends_and_a_byte_order_mark_and_reads_pipes(tmp_path):
    text = "\ufeff0-0 1-1\r\n2-2\n"
    (tmp_path / "gold.txt").write_bytes(text.encode("utf-8"))
    assert read_lines(str(tmp_path / "gold.txt")) == ["0-0 1-1", "2-2"]
    r, w = os.pipe()  # as bash's <(zcat gold.gz) gives it: /dev/fd/N
    os.write(w, text.encode("utf-8"))
    os.close(w)
    try:
        assert read_lines(f"/dev/fd/{r}") == ["0-0 1-1", "2-2"]
    finally:
        os.close(r)
    (tmp_path / "latin1.txt").write_bytes("ok\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(VecoUserError, match=r"--src .*latin1.txt: not UTF-8 text .*iconv"):
        read_lines(str(tmp_path / "latin1.txt"), "--src")
