"""``veco-sentence-eval``: accuracy of ``veco_sentence_prediction`` checkpoints (or of
fine-tuned RoBERTa/XLM-R classifiers: :mod:`veco_plugin.checkpoints.classifier`) on each
test file, one table (zero-shot transfer: fine-tuned on one language, read on the others'
files).

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
import re
from typing import Dict, List, Optional, Sequence

import torch
from fairseq import utils

from ..checkpoints.classifier import load_classifier
from ..data.translated_dataset import VecoTranslatedDataset
from ..errors import VecoUserError
from ..outputs import check_output_file, write_text
from .common import parse_checkpoints, run_cli

PROG = "veco-sentence-eval"
# torch's load_state_dict error for a dictionary of another size than the checkpoint's
EMBEDDING_ROWS = re.compile(
    r"embed_tokens\.weight: copying a param with shape torch\.Size\(\[(\d+), \d+\]\) from "
    r"checkpoint, the shape in current model is torch\.Size\(\[(\d+),"
)
logger = logging.getLogger("veco_plugin.cli.sentence_prediction_eval")


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        epilog=(
            "example: veco-sentence-eval --data data/xnli-bin --checkpoint "
            "veco=checkpoints/checkpoint_best.pt --splits test_de"
        ),
        prog=PROG,
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--data", required=True, help="binarized DATA (input0/, label/, ...)")
    p.add_argument("--checkpoint", action="append", required=True, metavar="NAME=PATH")
    p.add_argument("--splits", default="test_en,test_de,test_fr")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--json", default=None, help="also write the table here")
    return p


def check_data(data: str, splits: Sequence[str]) -> None:
    """DATA is ``veco-prepare-sentence-prediction``'s layout and holds every split."""
    if not os.path.isdir(data):
        what = " is a file" if os.path.exists(data) else ": no such directory"
        raise VecoUserError(
            f"--data {data}{what}: give the DATA directory veco-prepare-sentence-prediction wrote"
        )
    for key in ("input0", "label"):
        if not os.path.isfile(os.path.join(data, key, "dict.txt")):
            raise VecoUserError(
                f"--data {data} has no {key}/dict.txt: give the DATA directory "
                "veco-prepare-sentence-prediction wrote"
            )
    held = sorted(
        f[: -len(".idx")] for f in os.listdir(os.path.join(data, "input0")) if f.endswith(".idx")
    )
    for split in splits:
        if split not in held:
            raise VecoUserError(
                f"--splits {','.join(splits)}: {data} has no split {split!r} (it holds "
                f"{', '.join(held) or 'none'}): binarize it with veco-prepare-sentence-"
                f"prediction --split {split}=TSV, or name one of those"
            )
        if not os.path.isfile(os.path.join(data, "label", f"{split}.idx")):
            raise VecoUserError(
                f"--splits {','.join(splits)}: {data} has no labels of {split} "
                f"(label/{split}.idx): accuracy needs them; binarize its labelled TSV with "
                f"veco-prepare-sentence-prediction --split {split}=TSV"
            )


def parse_splits(value: str) -> List[str]:
    splits = value.split(",")
    if not value or "" in splits:
        raise VecoUserError(
            f"--splits {value!r}: comma-separated split names, none empty (e.g. test_en,test_de)"
        )
    twice = sorted({s for s in splits if splits.count(s) > 1})
    if twice:
        raise VecoUserError(f"--splits {value}: {twice[0]} is named twice: name each split once")
    return splits


def accuracy(task, model, criterion, dataset, batch_size: int) -> float:
    """Accuracy (%) of the examples x (``x_accuracy``) over ``dataset``."""
    batches = task.get_batch_iterator(
        dataset, max_sentences=batch_size, ignore_invalid_inputs=False
    ).next_epoch_itr(shuffle=False)
    correct, total = 0, 0
    cuda = next(model.parameters()).is_cuda
    with torch.no_grad():
        for sample in batches:
            _, _, log = criterion(model, utils.move_to_cuda(sample) if cuda else sample)
            correct += int(log["ncorrect_x"])
            total += int(log["nexamples"])
    return 100.0 * correct / max(total, 1)


def load(name: str, path: str, data: str):
    """``(model, cfg, task)`` of the classifier ``--checkpoint name=path`` on DATA; a file
    that is no usable checkpoint is one line naming the flag."""
    named = f"--checkpoint {name}={path}"
    try:
        model, cfg, task = load_classifier(path, data, named)
    except VecoUserError as exc:
        message = str(exc)
        if message.startswith(named):
            raise
        raise VecoUserError(
            f"--checkpoint {name}={message}" if message.startswith(path) else f"{named}: {message}"
        ) from None
    except Exception as exc:
        rows = EMBEDDING_ROWS.search(str(exc)) if isinstance(exc, RuntimeError) else None
        if rows is not None:  # torch's size mismatch: DATA of another dictionary
            raise VecoUserError(
                f"--checkpoint {name}={path}: its embeddings have {rows.group(1)} rows, "
                f"{data}/input0/dict.txt gives {rows.group(2)}: binarize DATA with the "
                "checkpoint's dict.txt and sentencepiece model (veco-prepare-sentence-"
                "prediction --dict, --spm-model)"
            ) from None
        raise
    head = model.classification_heads[cfg.task.classification_head_name]
    classes = head.out_proj.out_features
    symbols = task.label_dictionary.symbols[task.label_dictionary.nspecial :]
    labels = [s for s in symbols if s != "<mask>"]  # the task adds <mask> to every dict
    if len(labels) != classes:
        raise VecoUserError(
            f"--checkpoint {name}={path}: its head has {classes} classes, {data}/label/dict.txt "
            f"{len(labels)} labels: evaluate on the data of the task it was fine-tuned for"
        )
    return model, cfg, task


def evaluate(
    data: str, name: str, path: str, splits: Sequence[str], batch_size: int
) -> Dict[str, Dict[str, Optional[float]]]:
    """``{column: {split: accuracy or None}}`` of one checkpoint."""
    model, cfg, task = load(name, path, data)
    if torch.cuda.is_available():
        model.cuda()
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


def _same(a: str, b: str) -> bool:
    return os.path.exists(a) and os.path.samefile(a, b)


def main(args: argparse.Namespace) -> Dict[str, Dict[str, Optional[float]]]:
    """Check every flag, then evaluate each checkpoint; print (and write) the table."""
    splits = parse_splits(args.splits)
    if args.batch_size < 1:
        raise VecoUserError(f"--batch-size {args.batch_size}: give 1 or more")
    if args.json:
        check_output_file(args.json, "--json", "scores.json")
    checkpoints = parse_checkpoints(args.checkpoint)
    if args.json and any(_same(args.json, path) for _, path in checkpoints):
        raise VecoUserError(
            f"--json {args.json} is a --checkpoint, which the table would replace: name "
            "another file, e.g. scores.json"
        )
    check_data(args.data, splits)
    columns: Dict[str, Dict[str, Optional[float]]] = {}
    for name, path in checkpoints:
        columns.update(evaluate(args.data, name, path, splits, args.batch_size))
    print(table(columns, splits))
    if args.json:
        write_text(args.json, json.dumps(columns, indent=2) + "\n")
    return columns


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    run_cli(PROG, get_parser, main, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
