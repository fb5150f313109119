"""``veco-qa-eval``: zero-shot extractive QA scores of ``veco_span_qa`` checkpoints, one
row per checkpoint, one column per test language and their average: exact match and F1
(:mod:`veco_plugin.evaluation.qa_scores`).

::

    veco-qa-eval --data data/squad-bin --checkpoint xlmr=ft/xlmr/checkpoint_best.pt \\
        --checkpoint veco=ft/veco/checkpoint_best.pt --test en=xquad.en.json \\
        --test de=xquad.de.json --json scores.json --predictions preds/

``--test LANG=FILE.json``: a SQuAD-format file as published. ``en`` is scored with SQuAD
v1.1's normalisation, every other language with MLQA's for that language (its articles,
Unicode punctuation, zh's mixed segmentation: MLQA's script); ``--normalisation squad``
scores every language with SQuAD v1.1's, as XTREME scores XQuAD. ``--predictions DIR``:
``DIR/NAME/predictions.LANG.json``, ``{id: answer}`` as the official scripts read it.
"""

import argparse
import json
import os
from typing import Dict, Mapping, Optional, Sequence

from ..corpora.squad import QaExample, gold_answers, read_squad
from ..errors import VecoUserError
from ..evaluation.qa_decode import write_predictions
from ..evaluation.qa_scores import MLQA_ARTICLES, score
from ..evaluation.span_qa import answer_questions, load_span_qa
from ..outputs import check_output_dir, check_output_file, write_text
from .common import run_cli
from .prepare_span_qa import single_files
from .sentence_prediction_eval import parse_checkpoints
from .tag_eval import table

PROG = "veco-qa-eval"
SQUAD_LANG = "en"  # scored with SQuAD v1.1's normalisation; the others with MLQA's


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="veco-prepare-span-qa's DATA")
    p.add_argument("--checkpoint", action="append", required=True, metavar="NAME=PATH")
    p.add_argument("--test", action="append", required=True, metavar="LANG=FILE.json")
    p.add_argument(
        "--normalisation",
        choices=("mlqa", "squad"),
        default="mlqa",
        help="mlqa: SQuAD v1.1's for en, MLQA's for the others (MLQA); squad: SQuAD v1.1's "
        "for every language (XTREME's XQuAD scoring) [%(default)s]",
    )
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--json", default=None, help="also write the scores here")
    p.add_argument("--predictions", default=None, help="write {id: answer} files under DIR")
    return p


def scoring(lang: str, normalisation: str = "mlqa") -> Optional[str]:
    """The ``lang`` argument of :func:`score`: None (SQuAD v1.1) for en or with
    ``normalisation`` squad, else lang (MLQA)."""
    return None if lang == SQUAD_LANG or normalisation == "squad" else lang


def evaluate(args, name: str, path: str, read: Mapping[str, Sequence[QaExample]]) -> Dict:
    model, cfg, task = load_span_qa(path, args.data, f"--checkpoint {name}={path}")
    head = cfg.task.classification_head_name
    scores: Dict[str, Dict[str, float]] = {"em": {}, "f1": {}}
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
    return scores


def main(args: argparse.Namespace) -> Dict[str, Dict]:
    if args.batch_size < 1:
        raise VecoUserError(f"--batch-size {args.batch_size}: give 1 or more")
    if args.json:
        check_output_file(args.json, "--json", "scores.json")
    if args.predictions:
        check_output_dir(args.predictions, "--predictions")
    checkpoints = parse_checkpoints(args.checkpoint)
    tests = single_files(args.test, "--test")
    for lang, path in tests.items():
        if scoring(lang, args.normalisation) is not None and lang not in MLQA_ARTICLES:
            raise VecoUserError(
                f"--test {lang}={path}: no MLQA normalisation for {lang!r}: name the test by "
                f"its language: en, or one of MLQA's ({', '.join(MLQA_ARTICLES)})"
            )
    read = {lang: read_squad(path) for lang, path in tests.items()}
    results = {name: evaluate(args, name, path, read) for name, path in checkpoints}
    columns = [*tests, "avg"]
    print(table(results, "em", columns) + "\n\n" + table(results, "f1", columns))
    squad = [lang for lang in tests if scoring(lang, args.normalisation) is None]
    others = [lang for lang in tests if lang not in squad]
    print(
        "\nnormalisation: "
        + (f"SQuAD v1.1 for {', '.join(squad)}" if squad else "")
        + ("; " if squad and others else "")
        + (f"MLQA's for {', '.join(others)}" if others else "")
    )
    if args.json:
        write_text(args.json, json.dumps(results, indent=2) + "\n")
    return results


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    run_cli(PROG, get_parser, main, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
