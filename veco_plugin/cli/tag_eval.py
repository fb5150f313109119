"""``veco-tag-eval``: zero-shot tagging scores of ``veco_tagging`` checkpoints, one row per
checkpoint, one column per test language and their average: word accuracy and XTREME's
seqeval F1 (:mod:`veco_plugin.evaluation.tagging_scores`).

::

    veco-tag-eval --data data/udpos-bin --checkpoint xlmr=ft/xlmr/checkpoint_best.pt \\
        --checkpoint veco=ft/veco/checkpoint_best.pt --test en=en_ewt-ud-test.conllu \\
        --test de=de_gsd-ud-test.conllu --json scores.json --predictions preds/

``--test LANG=FILE[,FILE...]``: labelled files as published (CoNLL-U or ``word<TAB>tag``),
pooled. ``--predictions DIR``: ``DIR/NAME/LANG/<file>`` in each input's own format (CoNLL-U
with the UPOS column predicted, or ``word<TAB>tag``). A gold tag the train split lacks
is scored wrong, counted in one warning line.
"""

import argparse
import logging
import os
from typing import Dict, List, Optional, Sequence

from ..corpora.tagging import (
    TaggedSentence,
    format_conllu_like,
    format_tagged_tsv,
    is_conllu,
    read_tagged,
)
from ..corpora.tagging_data import read_max_length
from ..errors import VecoUserError
from ..evaluation.tagging import load_tagger, tag_sentences
from ..evaluation.tagging_scores import accuracy, chunk_f1
from ..outputs import write_text
from .common import (
    check_score_outputs,
    metric_table,
    parse_checkpoints,
    parse_split_files,
    run_cli,
    write_scores,
)

PROG = "veco-tag-eval"
logger = logging.getLogger("veco_plugin.cli.tag_eval")


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        epilog=(
            "example: veco-tag-eval --data data/udpos-bin --checkpoint "
            "veco=checkpoints/checkpoint_best.pt --test de=udpos/test-de.tsv"
        ),
        prog=PROG,
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--data", required=True, help="veco-prepare-tagging's DATA")
    p.add_argument("--checkpoint", action="append", required=True, metavar="NAME=PATH")
    p.add_argument("--test", action="append", required=True, metavar="LANG=FILE[,FILE...]")
    p.add_argument(
        "--max-length",
        type=int,
        default=None,
        help="window length (default: the one veco-prepare-tagging wrote DATA with)",
    )
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--json", default=None, help="also write the scores here")
    p.add_argument("--predictions", default=None, help="write the predicted tags under DIR")
    return p


def _write_predictions(out: str, files: Sequence[str], read: List[TaggedSentence], tags):
    """One file per input file, in its own format."""
    os.makedirs(out, exist_ok=True)
    done = 0
    for path in files:
        count = sum(1 for s in read if s.where.rsplit(":", 1)[0] == path)
        part = tags[done : done + count]
        if is_conllu(path):
            text = format_conllu_like(path, part)
        else:
            mine = read[done : done + count]
            text = format_tagged_tsv(
                [TaggedSentence(s.words, tuple(t), s.where) for s, t in zip(mine, part)]
            )
        write_text(os.path.join(out, os.path.basename(path)), text)
        done += count


def evaluate(args, name: str, path: str, tests: Dict[str, List[str]], read) -> Dict:
    named = f"--checkpoint {name}={path}"
    model, cfg, task = load_tagger(path, args.data, named, args.max_length)
    known = set(task.label_dictionary.symbols[task.label_dictionary.nspecial :])
    scores: Dict[str, Dict[str, float]] = {"accuracy": {}, "f1": {}}
    for lang, files in tests.items():
        sentences = read[lang]
        unknown = sum(t not in known for s in sentences for t in s.tags)
        if unknown:
            logger.warning(
                "%s: %d words have tags the train split lacks: scored wrong", lang, unknown
            )
        head = cfg.task.classification_head_name
        tags = tag_sentences(model, task, head, sentences, args.max_length, args.batch_size)
        gold = [list(s.tags) for s in sentences]
        scores["accuracy"][lang] = 100 * accuracy(gold, tags)
        scores["f1"][lang] = 100 * chunk_f1(gold, tags)
        if args.predictions:
            _write_predictions(os.path.join(args.predictions, name, lang), files, sentences, tags)
    for table in scores.values():
        table["avg"] = sum(table[lang] for lang in tests) / len(tests)
    return scores


def main(args: argparse.Namespace) -> Dict[str, Dict]:
    if args.batch_size < 1:
        raise VecoUserError(f"--batch-size {args.batch_size}: give 1 or more")
    check_score_outputs(args)
    checkpoints = parse_checkpoints(args.checkpoint)
    if args.max_length is None:
        args.max_length = read_max_length(args.data)
    tests = parse_split_files(args.test, "--test")
    read = {lang: read_tagged(files) for lang, files in tests.items()}
    results = {name: evaluate(args, name, path, tests, read) for name, path in checkpoints}
    columns = [*tests, "avg"]
    print(
        metric_table(results, "accuracy", columns) + "\n\n" + metric_table(results, "f1", columns)
    )
    write_scores(args.json, results)
    return results


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    run_cli(PROG, get_parser, main, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
