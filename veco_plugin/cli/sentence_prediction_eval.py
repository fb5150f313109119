"""``veco-sentence-eval``: accuracy of ``veco_sentence_prediction`` checkpoints on
each test file, one table (zero-shot transfer: fine-tuned on one language, read on
the others' files).

::

    python -m veco_plugin.cli.sentence_prediction_eval --data data/paraphrase-bin \\
        --checkpoint out=ckpt/out/checkpoint_best.pt --checkpoint in=ckpt/in/checkpoint_best.pt \\
        --splits test_en,test_de,test_fr

A plug-in checkpoint gets two columns: ``in`` without translations (the plug-out
fallback: the zero-shot setting) and ``in+tr`` with each file's translation
(``trans0``/``trans1``; ``-`` where the split has none).
"""

import argparse
import json
import logging
import os
from typing import Dict, List, Optional, Sequence, Tuple

import torch
from fairseq import checkpoint_utils

from ..data.translated_dataset import VecoTranslatedDataset
from ..errors import VecoUserError
from .common import run_cli

PROG = "veco-sentence-eval"
logger = logging.getLogger("veco_plugin.cli.sentence_prediction_eval")


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="binarized DATA (input0/, label/, ...)")
    p.add_argument("--checkpoint", action="append", required=True, metavar="NAME=PATH")
    p.add_argument("--splits", default="test_en,test_de,test_fr")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--json", default=None, help="also write the table here")
    return p


def accuracy(task, model, criterion, dataset, batch_size: int) -> float:
    """Accuracy (%) of the examples x (``x_accuracy``) over ``dataset``."""
    batches = task.get_batch_iterator(
        dataset, max_sentences=batch_size, ignore_invalid_inputs=False
    ).next_epoch_itr(shuffle=False)
    correct, total = 0, 0
    with torch.no_grad():
        for sample in batches:
            _, _, log = criterion(model, sample)
            correct += int(log["ncorrect_x"])
            total += int(log["nexamples"])
    return 100.0 * correct / max(total, 1)


def evaluate(
    data: str, name: str, path: str, splits: Sequence[str], batch_size: int
) -> Dict[str, Dict[str, Optional[float]]]:
    """``{column: {split: accuracy or None}}`` of one checkpoint."""
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task(
        [path], arg_overrides={"data": data}
    )
    model = models[0].eval()
    criterion = task.build_criterion(cfg.criterion)
    plug_in = cfg.task.plug_mode == "in"
    columns: Dict[str, Dict[str, Optional[float]]] = {name: {}}
    if plug_in:
        columns[f"{name}+tr"] = {}
    for split in splits:
        task.load_dataset(split)
        dataset = task.dataset(split)
        translated = isinstance(dataset, VecoTranslatedDataset)
        bare = dataset.dataset if translated else dataset
        columns[name][split] = accuracy(task, model, criterion, bare, batch_size)
        if plug_in:
            columns[f"{name}+tr"][split] = (
                accuracy(task, model, criterion, dataset, batch_size) if translated else None
            )
    return columns


def table(columns: Dict[str, Dict[str, Optional[float]]], splits: Sequence[str]) -> str:
    names = list(columns)
    lines = ["split      " + "".join(f"{n:>10}" for n in names)]
    for split in splits:
        cells = [columns[n][split] for n in names]
        lines.append(
            f"{split:<11}" + "".join("         -" if c is None else f"{c:10.1f}" for c in cells)
        )
    return "\n".join(lines)


def parse_checkpoints(values: Sequence[str]) -> List[Tuple[str, str]]:
    out = []
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise VecoUserError(f"--checkpoint {value}: expected NAME=PATH")
        if not os.path.isfile(path):
            raise VecoUserError(f"--checkpoint {value}: no such file {path}")
        out.append((name, path))
    return out


def main(args: argparse.Namespace) -> Dict[str, Dict[str, Optional[float]]]:
    splits = [s for s in args.splits.split(",") if s]
    columns: Dict[str, Dict[str, Optional[float]]] = {}
    for name, path in parse_checkpoints(args.checkpoint):
        columns.update(evaluate(args.data, name, path, splits, args.batch_size))
    print(table(columns, splits))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(columns, f, indent=2)
    return columns


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    run_cli(PROG, get_parser, main, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
