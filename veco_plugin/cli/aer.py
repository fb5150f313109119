"""Score predicted word alignments against a gold standard: precision, recall, F1, AER.

::

    veco-aer gold.talp pred.align
    veco-aer test.wa.nonullalign pred.align --gold-format naacl --src test.en --tgt test.fr
    veco-aer alignment-test-sets/de-en/alignv2.txt de-en.align --gold-format naacl \\
        --src alignment-test-sets/de-en/test.de --tgt alignment-test-sets/de-en/test.en

Prints the corpus counts, then, as the last line, the scores in percent::

    sentences 3 gold sure 5 possible 8 predicted 7 matched sure 3 possible 5
    precision 71.43 recall 60.00 f1 65.22 aer 33.33

``matched sure`` is |A ∩ S| and ``matched possible`` is |A ∩ P| (sure links are also
possible). A gold link outside its sentence (a position before the first word, or, with
``--src``/``--tgt``, past the last) is left out, with one warning line saying how many.
Definitions, formats and degenerate cases (an empty prediction scores
precision 0.00 and aer 100.00): :mod:`veco_plugin.evaluation.aer`.
"""

from __future__ import annotations

import argparse
import logging
from typing import Optional, Sequence

from ..errors import VecoUserError
from ..evaluation.aer import (
    GOLD_FORMATS,
    AerScores,
    aer_scores,
    evaluate_files,
    format_counts,
    format_scores,
)
from ..outputs import check_named
from .common import run_cli

logger = logging.getLogger("veco_plugin.cli.aer")


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        epilog="example: veco-aer gold.talp test.align --gold-format naacl",
        prog="veco-aer",
        description="Score word alignments against a gold standard with sure and possible "
        "links: precision, recall, F1 and alignment error rate (Och & Ney 2003), summed "
        "over the corpus. The last line printed is 'precision P recall R f1 F aer A' "
        "(percent).",
    )
    parser.add_argument(
        "gold",
        metavar="GOLD",
        help="gold alignment (format: --gold-format)",
    )
    parser.add_argument(
        "pred",
        metavar="PRED",
        help="predicted alignment: one line per sentence pair, links 'i-j' (0-based unless "
        "--one-based-pred), an empty line for no links",
    )
    parser.add_argument(
        "--gold-format",
        choices=GOLD_FORMATS,
        default="pharaoh",
        help="pharaoh: one line per sentence pair, 'i-j' sure and 'ipj' possible links, "
        "0-based; naacl: WPT 2003 'sentence_no i j [S|P] [confidence]' per line, words "
        "1-based, the k-th smallest sentence_no is sentence pair k (as in the XLM-Align and "
        "SimAlign test sets) (default: %(default)s)",
    )
    parser.add_argument(
        "--one-based-pred",
        action="store_true",
        help="PRED counts words from 1",
    )
    parser.add_argument(
        "--src",
        metavar="FILE",
        help="source sentences, whitespace-tokenized, one per line (with --tgt): gold links "
        "past the end of their sentence are left out, predicted ones refused",
    )
    parser.add_argument(
        "--tgt",
        metavar="FILE",
        help="target sentences, line-aligned with --src",
    )
    return parser


def evaluate(args: argparse.Namespace) -> AerScores:
    """Score ``args.pred`` against ``args.gold``; print the counts, then the scores."""
    check_named({"GOLD": args.gold, "PRED": args.pred, "--src": args.src, "--tgt": args.tgt})
    counts = evaluate_files(
        args.gold, args.pred, args.gold_format, args.one_based_pred, args.src, args.tgt
    )
    if counts.predicted == 0:
        logger.warning("%s has no links: precision, recall and f1 are 0", args.pred)
    if counts.sure == 0:
        logger.warning("%s has no sure links: recall and f1 are 0", args.gold)
    scores = aer_scores(counts)
    print(format_counts(counts))
    print(format_scores(scores))
    return scores


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    """Console entry point ``veco-aer``; exits 1 with one line on a user error."""
    run_cli("veco-aer", get_parser, evaluate, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
