"""``veco-qa-eval``: zero-shot extractive QA scores of ``veco_span_qa`` checkpoints, one
row per checkpoint, one column per test language and their average: exact match and F1
(:mod:`veco_plugin.evaluation.qa_scores`).

::

    veco-qa-eval --data data/squad-bin --checkpoint xlmr=ft/xlmr/checkpoint_best.pt \\
        --checkpoint veco=ft/veco/checkpoint_best.pt --test en=xquad.en.json \\
        --test de=xquad.de.json --json scores.json --predictions preds/

``--test LANG=FILE.json``: a SQuAD-format file as published, LANG its language (the
answer language). The rules, as XTREME's ``evaluate.py`` and ``scripts/eval_qa.sh`` apply
them (:mod:`veco_plugin.evaluation.qa_scores`):

* ``--normalisation mlqa`` (the default; MLQA): every language, ``en`` included, with
  MLQA's normalisation for LANG (its articles, Unicode punctuation, zh's mixed
  segmentation), LANG one of MLQA's (en es de ar hi vi zh);
* ``--normalisation squad`` (XQuAD, TyDiQA-GoldP): SQuAD v1.1's in every language.

The table's last line and each row of ``--json`` (``"normalisation": {LANG: "mlqa-LANG" |
"squad-v1.1"}``) say which rules scored each language. ``--predictions DIR``:
``DIR/NAME/predictions.LANG.json``, ``{id: answer}`` as the official scripts read it.
"""

import argparse
import os
from typing import Any, Dict, Mapping, Optional, Sequence

from ..corpora.squad import QaExample, gold_answers, read_squad
from ..errors import VecoUserError
from ..evaluation.qa_decode import write_predictions
from ..evaluation.qa_scores import MLQA_ARTICLES, score
from ..evaluation.span_qa import answer_questions, load_span_qa
from .common import (
    check_score_outputs,
    metric_table,
    parse_checkpoints,
    run_cli,
    single_files,
    write_scores,
)

PROG = "veco-qa-eval"


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        epilog=(
            "example: veco-qa-eval --data data/qa-bin --checkpoint "
            "veco=checkpoints/checkpoint_best.pt --test de=xquad.de.json"
        ),
        prog=PROG,
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--data", required=True, help="veco-prepare-span-qa's DATA")
    p.add_argument("--checkpoint", action="append", required=True, metavar="NAME=PATH")
    p.add_argument("--test", action="append", required=True, metavar="LANG=FILE.json")
    p.add_argument(
        "--normalisation",
        choices=("mlqa", "squad"),
        default="mlqa",
        help="mlqa: MLQA's for each test's language, en included (MLQA); squad: SQuAD "
        "v1.1's for every language (XQuAD, TyDiQA-GoldP) [%(default)s]",
    )
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--json", default=None, help="also write the scores here")
    p.add_argument("--predictions", default=None, help="write {id: answer} files under DIR")
    return p


def scoring(lang: str, normalisation: str = "mlqa") -> Optional[str]:
    """The ``lang`` argument of :func:`score`: None (SQuAD v1.1) with ``normalisation``
    squad, else lang (MLQA's rules for it, en included, as XTREME's evaluate.py)."""
    return None if normalisation == "squad" else lang


def rules(lang: str, normalisation: str) -> str:
    """What scored ``lang``: ``squad-v1.1`` or ``mlqa-LANG``."""
    answer_language = scoring(lang, normalisation)
    return "squad-v1.1" if answer_language is None else f"mlqa-{answer_language}"


def evaluate(args, name: str, path: str, read: Mapping[str, Sequence[QaExample]]) -> Dict:
    model, cfg, task = load_span_qa(path, args.data, f"--checkpoint {name}={path}")
    head = cfg.task.classification_head_name
    scores: Dict[str, Any] = {"em": {}, "f1": {}}
    for lang, examples in read.items():
        predictions = answer_questions(model, task, head, examples, args.batch_size)
        result = score(gold_answers(list(examples)), predictions, scoring(lang, args.normalisation))
        scores["em"][lang], scores["f1"][lang] = result.exact_match, result.f1
        if args.predictions:
            os.makedirs(os.path.join(args.predictions, name), exist_ok=True)
            out = os.path.join(args.predictions, name, f"predictions.{lang}.json")
            write_predictions(predictions, out)
    for metric in scores.values():
        metric["avg"] = sum(metric[lang] for lang in read) / len(read)
    scores["normalisation"] = {lang: rules(lang, args.normalisation) for lang in read}
    return scores


def main(args: argparse.Namespace) -> Dict[str, Dict]:
    if args.batch_size < 1:
        raise VecoUserError(f"--batch-size {args.batch_size}: give 1 or more")
    check_score_outputs(args)
    checkpoints = parse_checkpoints(args.checkpoint)
    tests = single_files(args.test, "--test")
    for lang, path in tests.items():
        if scoring(lang, args.normalisation) is not None and lang not in MLQA_ARTICLES:
            raise VecoUserError(
                f"--test {lang}={path}: no MLQA normalisation for {lang!r}: name the test by "
                f"its language, one of MLQA's ({', '.join(MLQA_ARTICLES)}), or give "
                "--normalisation squad (XQuAD, TyDiQA-GoldP)"
            )
    read = {lang: read_squad(path) for lang, path in tests.items()}
    results = {name: evaluate(args, name, path, read) for name, path in checkpoints}
    columns = [*tests, "avg"]
    print(metric_table(results, "em", columns) + "\n\n" + metric_table(results, "f1", columns))
    print("\n" + rules_line(list(tests), args.normalisation))
    write_scores(args.json, results)
    return results


def rules_line(langs: Sequence[str], normalisation: str) -> str:
    """The table's last line: which rules scored the languages."""
    if normalisation == "squad":
        return f"normalisation: SQuAD v1.1's for {', '.join(langs)}"
    return f"normalisation: MLQA's for {', '.join(langs)} (each its own answer language)"


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    run_cli(PROG, get_parser, main, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
