"""``veco-bucc-eval`` (``python -m veco_plugin.cli.bucc_eval``): BUCC 2018 bitext mining of
pre-trained encoders as XTREME runs it (no fine-tuning), one row per checkpoint
(:mod:`veco_plugin.evaluation.bucc`).

::

    python -m veco_plugin.cli.bucc_eval --data download/bucc2018 \\
        --checkpoint xlmr=xlmr.base/model.pt --json scores.json --predictions preds/

``--data DIR``: XTREME's bucc2018 download (``xx-en.{dev,test}.{xx,en}``, ``xx-en.dev.gold``);
``--test LANG`` (default: those of de, fr, ru, zh found). Per language: CLS states of
XTREME's layer, ratio-margin mining of each split, the threshold of the best dev F1, the
test pairs above it written to ``--predictions DIR/NAME/test-LANG.tsv`` (XTREME's
prediction file). ``--json``: ``{NAME: {"dev_f1": {LANG: percent, "avg": percent},
"threshold": {LANG: margin}, "layer": L}}``, plus ``"f1"`` (the test F1, the headline) when
every language's ``xx-en.test.gold`` is there (BUCC's training gold; XTREME withholds it).
"""

import argparse
import logging
import os
from typing import Dict, List, Optional, Sequence

import torch

from ..checkpoints.encoder import find_spm_model, load_encoder, load_spm_model
from ..corpora.bucc import LANGS, BuccSplit, path, read_split
from ..errors import VecoUserError
from ..evaluation.bucc import best_threshold, extract, f1_scores, mine_split
from ..evaluation.xtreme_retrieval import resolve, sentence_embeddings
from ..outputs import write_text
from .common import (
    check_score_outputs,
    metric_table,
    parse_checkpoints,
    run_cli,
    write_scores,
)

PROG = "veco-bucc-eval"
logger = logging.getLogger("veco_plugin.cli.bucc_eval")


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        epilog=(
            "example: veco-bucc-eval --checkpoint veco=PRE/checkpoint_best.pt --data " "bucc2018/"
        ),
        prog=PROG,
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--data", required=True, help="XTREME's bucc2018 download folder")
    p.add_argument("--checkpoint", action="append", required=True, metavar="NAME=PATH")
    p.add_argument("--test", action="append", default=None, metavar="LANG", choices=LANGS)
    p.add_argument("--layer", type=int, default=None, help="0..L (default: XTREME's layer)")
    vocabulary = "default: next to each checkpoint, else in the data directory it records"
    p.add_argument("--spm-model", default=None, help=vocabulary)
    p.add_argument("--dict", default=None, help=vocabulary)
    p.add_argument("--batch-size", type=int, default=100, help="XTREME's 100")
    p.add_argument("--json", default=None, help="also write the scores here")
    p.add_argument("--predictions", default=None, help="write DIR/NAME/test-LANG.tsv")
    p.add_argument("--cpu", action="store_true", help="run on the CPU")
    return p


def read_tests(data: str, langs: Optional[Sequence[str]]) -> Dict[str, Dict[str, BuccSplit]]:
    if not os.path.isdir(data):
        raise VecoUserError(f"--data {data}: not a directory (XTREME's bucc2018 download)")
    if not langs:
        langs = [lang for lang in LANGS if os.path.isfile(path(data, lang, "dev", "gold"))]
        if not langs:
            raise VecoUserError(f"--data {data}: no xx-en.dev.gold of {', '.join(LANGS)}")
    return {lang: {s: read_split(data, lang, s) for s in ("dev", "test")} for lang in langs}


def evaluate(
    args: argparse.Namespace, name: str, ckpt: str, tests: Dict[str, Dict[str, BuccSplit]]
):
    device = torch.device("cuda" if torch.cuda.is_available() and not args.cpu else "cpu")
    spm = load_spm_model(find_spm_model(args.spm_model, ckpt))
    model, dictionary = load_encoder(ckpt, args.dict, device)
    layer = resolve(model, args.layer, "bucc2018")

    def embed(lines: List[str]) -> torch.Tensor:
        return sentence_embeddings(model, dictionary, spm, lines, layer, "cls", args.batch_size)

    out: Dict[str, Dict[str, float]] = {"dev_f1": {}, "threshold": {}, "f1": {}}
    for lang, splits in tests.items():
        mined = {s: mine_split(split, embed) for s, split in splits.items()}
        gold = {s: ["\t".join(p) for p in split.gold or ()] for s, split in splits.items()}
        threshold = best_threshold(mined["dev"], splits["dev"].gold or set())
        out["threshold"][lang] = threshold
        out["dev_f1"][lang] = f1_scores(gold["dev"], extract(mined["dev"], threshold)).f1
        predicted = extract(mined["test"], threshold)
        if splits["test"].gold is not None:
            out["f1"][lang] = f1_scores(gold["test"], predicted).f1
        if args.predictions:
            write_text(
                os.path.join(args.predictions, name, f"test-{lang}.tsv"),
                "".join(f"{line}\n" for line in predicted),
            )
    for metric in ("dev_f1", "f1"):
        if len(out[metric]) == len(tests):
            out[metric]["avg"] = sum(out[metric].values()) / len(tests)
    if len(out["f1"]) < len(tests):
        logger.warning("no xx-en.test.gold for every language: the test F1 is left out")
        del out["f1"]
    return {**out, "layer": layer}


def main(args: argparse.Namespace) -> Dict[str, Dict]:
    if args.batch_size < 1:
        raise VecoUserError(f"--batch-size {args.batch_size}: give 1 or more")
    check_score_outputs(args)
    checkpoints = parse_checkpoints(args.checkpoint)
    tests = read_tests(args.data, args.test)
    results = {name: evaluate(args, name, ckpt, tests) for name, ckpt in checkpoints}
    metric = "f1" if all("f1" in r for r in results.values()) else "dev_f1"
    print(metric_table(results, metric, [*tests, "avg"]))
    write_scores(args.json, results)
    return results


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    run_cli(PROG, get_parser, main, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
