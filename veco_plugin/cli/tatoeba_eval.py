"""``veco-tatoeba-eval``: Tatoeba retrieval accuracy of pre-trained encoders as XTREME
measures it (no fine-tuning): one row per checkpoint, one column per language and their
average (:mod:`veco_plugin.evaluation.xtreme_retrieval`).

::

    veco-tatoeba-eval --data LASER/data/tatoeba/v1 --checkpoint xlmr=xlmr.base/model.pt \\
        --json scores.json --predictions preds/
    veco-tatoeba-eval --checkpoint veco=ck/checkpoint_best.pt --spm-model DATA/spm.model \\
        --test de=tatoeba.deu-eng.deu,tatoeba.deu-eng.eng --test fr

``--data DIR``: LASER's ``data/tatoeba/v1``; without ``--test``, every one of XTREME's 36
languages found there. ``--test LANG`` reads LANG's two files from DIR, ``--test
LANG=XXX_FILE,ENG_FILE`` names them. Each English sentence retrieves its nearest
non-English sentence (XTREME's direction) by the cosine of mean-pooled layer states
(default layer: XTREME's for the model's depth). ``--json``: ``{NAME: {"accuracy": {LANG:
percent, "avg": percent}, "sentences": {LANG: n}, "layer": L}}``. ``--predictions DIR``:
``DIR/NAME/test-LANG.tsv``, the retrieved index for each English line, XTREME's
prediction layout (gold: the line's own index).
"""

import argparse
import logging
import os
from typing import Dict, List, Optional, Sequence

import torch

from ..checkpoints.encoder import find_spm_model, load_encoder, load_spm_model
from ..corpora.tatoeba import LASER_CODES, TatoebaPair, available, laser_files, read_pair
from ..errors import VecoUserError
from ..evaluation.xtreme_retrieval import accuracy, nearest, resolve, sentence_embeddings
from ..outputs import write_text
from .common import (
    check_score_outputs,
    metric_table,
    parse_checkpoints,
    run_cli,
    write_scores,
)

PROG = "veco-tatoeba-eval"
logger = logging.getLogger("veco_plugin.cli.tatoeba_eval")


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        epilog=(
            "example: veco-tatoeba-eval --checkpoint veco=PRE/checkpoint_best.pt --data "
            "LASER/data/tatoeba/v1"
        ),
        prog=PROG,
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--data", default=None, help="LASER's data/tatoeba/v1 folder")
    p.add_argument("--checkpoint", action="append", required=True, metavar="NAME=PATH")
    p.add_argument(
        "--test",
        action="append",
        default=None,
        metavar="LANG[=XXX_FILE,ENG_FILE]",
        help="XTREME's language code; its files from --data unless named (default: all of "
        "XTREME's 36 found under --data)",
    )
    p.add_argument("--layer", type=int, default=None, help="0..L (default: XTREME's layer)")
    vocabulary = "default: next to each checkpoint, else in the data directory it records"
    p.add_argument("--spm-model", default=None, help=vocabulary)
    p.add_argument("--dict", default=None, help=vocabulary)
    p.add_argument("--batch-size", type=int, default=100, help="XTREME's 100")
    p.add_argument("--json", default=None, help="also write the scores here")
    p.add_argument("--predictions", default=None, help="write DIR/NAME/test-LANG.tsv")
    p.add_argument("--cpu", action="store_true", help="run on the CPU")
    return p


def _named_files(value: str) -> Optional[List[str]]:
    lang, sep, files = value.partition("=")
    if not sep:
        return None
    paths = files.split(",")
    if len(paths) != 2 or "" in paths or not lang:
        raise VecoUserError(f"--test {value}: expected LANG or LANG=XXX_FILE,ENG_FILE")
    return paths


def read_tests(data: Optional[str], tests: Optional[Sequence[str]]) -> Dict[str, TatoebaPair]:
    """The pairs ``--test`` names (each from ``--data`` unless its files are given), or
    every XTREME language under ``--data``."""
    if data is not None and not os.path.isdir(data):
        raise VecoUserError(f"--data {data}: not a directory (LASER's data/tatoeba/v1)")
    if not tests:
        if data is None:
            raise VecoUserError("give --data LASER/data/tatoeba/v1, or --test LANG=XXX,ENG")
        tests = available(data)
        if not tests and any(name.endswith("-en.en") for name in os.listdir(data)):
            raise VecoUserError(
                f"--data {data} holds XTREME's download (<xx>-en.en: the English sides sorted, "
                "the gold order lost): give LASER's data/tatoeba/v1"
            )
        if not tests:
            raise VecoUserError(
                f"--data {data}: none of XTREME's tatoeba.<xxx>-eng.{{<xxx>,eng}} files"
            )
        missing = [lang for lang in LASER_CODES if lang not in tests]
        if missing:
            logger.warning("XTREME's languages not under %s: %s", data, ", ".join(missing))
    pairs: Dict[str, TatoebaPair] = {}
    for value in tests:
        lang = value.partition("=")[0]
        files = _named_files(value)
        if files is None:
            if data is None:
                raise VecoUserError(f"--test {value}: give --data, or LANG=XXX_FILE,ENG_FILE")
            files = list(laser_files(data, lang))
        if lang in pairs:
            raise VecoUserError(f"--test {value}: {lang} is given twice")
        pairs[lang] = read_pair(lang, *files)
    return pairs


def evaluate(args: argparse.Namespace, name: str, path: str, pairs: Dict[str, TatoebaPair]):
    """One checkpoint: accuracy per language, English -> non-English."""
    device = torch.device("cuda" if torch.cuda.is_available() and not args.cpu else "cpu")
    spm = load_spm_model(find_spm_model(args.spm_model, path))
    model, dictionary = load_encoder(path, args.dict, device)
    layer = resolve(model, args.layer, "tatoeba")
    scores: Dict[str, Dict[str, float]] = {"accuracy": {}}
    sentences: Dict[str, int] = {}
    for lang, pair in pairs.items():
        embed = [
            sentence_embeddings(model, dictionary, spm, side, layer, "mean", args.batch_size)
            for side in (pair.sentences, pair.english)
        ]
        predicted = nearest(embed[1], embed[0]).tolist()  # (N,): English -> non-English
        scores["accuracy"][lang] = accuracy(predicted, list(range(len(predicted))))
        sentences[lang] = len(predicted)
        if args.predictions:
            out = os.path.join(args.predictions, name, f"test-{lang}.tsv")
            write_text(out, "".join(f"{p}\n" for p in predicted))
    scores["accuracy"]["avg"] = sum(scores["accuracy"].values()) / len(pairs)
    return {**scores, "sentences": sentences, "layer": layer}


def main(args: argparse.Namespace) -> Dict[str, Dict]:
    if args.batch_size < 1:
        raise VecoUserError(f"--batch-size {args.batch_size}: give 1 or more")
    if args.layer is not None and args.layer < 0:
        raise VecoUserError(f"--layer {args.layer}: 0 (the embeddings) or more")
    check_score_outputs(args)
    checkpoints = parse_checkpoints(args.checkpoint)
    pairs = read_tests(args.data, args.test)
    results = {name: evaluate(args, name, path, pairs) for name, path in checkpoints}
    print(metric_table(results, "accuracy", [*pairs, "avg"]))
    write_scores(args.json, results)
    return results


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    run_cli(PROG, get_parser, main, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
