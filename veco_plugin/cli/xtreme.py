"""``veco-xtreme``: checkpoints -> their zero-shot cross-lingual table (XTREME's udpos,
xquad, xnli, pawsx): prepare, fine-tune on English with XTREME's recipe, keep the best
checkpoint on English dev, score every test language.

::

    veco-xtreme --task udpos --checkpoint xlmr=xlmr.base/model.pt \\
        --checkpoint veco=ckpt/pre/checkpoint_best.pt --data udpos/ --out runs/udpos
    veco-xtreme --task xquad --checkpoint veco=PRE.pt --train squad-train.json \\
        --dev squad-dev.json --test en=xquad.en.json --test de=xquad.de.json --out runs/xquad

``--data DIR`` stands for ``--train DIR/train-en.*``, ``--dev DIR/dev-en.*`` and a
``--test LANG=DIR/test-LANG.*`` per file (XTREME's layout); the explicit flags win.
``--random-baseline`` adds a row fine-tuned from random weights of the first checkpoint's
shape (what pre-training adds). Everything after ``--`` goes to fairseq-train
(``-- --bf16 --fp16-init-scale 4``). On a GPU machine it trains on every visible GPU
(fairseq's DDP), else on the CPU.

OUT holds each row's DATA, checkpoints, scores and predictions, the logs (OUT/logs), the
stamps of finished stages (a re-run skips them: OUT/stamps) and the table
(OUT/results.{md,json,png}). Recipes: :mod:`veco_plugin.xtreme.recipes`; stages:
:mod:`veco_plugin.xtreme.stages`.
"""

import argparse
import glob
import json
import math
import os
import sys
from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import VecoUserError
from ..outputs import write_text
from ..pipeline.runner import PipelineError, run_resumable
from ..xtreme import report, summary
from ..xtreme.models import Pretrained, describe, parse_checkpoint, random_twin
from ..xtreme.recipes import RECIPES, Recipe
from ..xtreme.stages import (
    Files,
    Settings,
    check_fairseq_flags,
    finetune_command,
    pipelines,
    scores_path,
)
from .common import check_at_least, run_cli

PROG = "veco-xtreme"
ALL = "all"


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        epilog=(
            "example: veco-xtreme --task udpos --checkpoint veco=PRE/checkpoint_best.pt "
            "--data udpos/ --out runs/udpos"
        ),
        prog=PROG,
        description=__doc__.split("\n\n")[0],
        usage="%(prog)s --task TASK --checkpoint NAME=PATH [...] (--data DIR | --train FILE "
        "--dev FILE --test LANG=FILE [...]) --out DIR [options] [-- fairseq-train flags]",
    )
    p.add_argument(
        "--task",
        required=True,
        choices=sorted(RECIPES) + [ALL],
        help=f"one task, or {ALL}: every task whose folder is under --data, and XTREME's score",
    )
    p.add_argument("--checkpoint", action="append", required=True, metavar="NAME=PATH")
    p.add_argument("--out", required=True, help="the run directory (a re-run resumes)")
    p.add_argument("--data", help="a folder of train-en.*, dev-en.*, test-LANG.* (XTREME's)")
    p.add_argument("--train", metavar="FILE[,FILE...]", help="English train file(s)")
    p.add_argument("--dev", metavar="FILE[,FILE...]", help="English dev file(s)")
    p.add_argument("--test", action="append", default=[], metavar="LANG=FILE[,FILE...]")
    p.add_argument("--random-baseline", action="store_true", help="add a random-init row")
    vocabulary = "(default: next to each checkpoint, else in the data directory it records)"
    p.add_argument("--spm-model", help=f"sentencepiece model {vocabulary}")
    p.add_argument("--dict", help=f"dict.txt {vocabulary}")
    g = p.add_argument_group("fine-tuning (default: the task's XTREME recipe)")
    g.add_argument("--lr", type=float, help="[the recipe's for the checkpoint's size]")
    g.add_argument("--epochs", type=int)
    g.add_argument(
        "--max-length", type=int, help="window or pair positions (xquad 384, the others 128)"
    )
    g.add_argument("--max-question", type=int, help="xquad: question pieces kept [64]")
    g.add_argument("--doc-stride", type=int, help="xquad: pieces between window starts [128]")
    g.add_argument(
        "--batch-size",
        type=int,
        help="examples an update, over all processes [32]; each process's batch is this "
        "divided by the processes and --update-freq",
    )
    g.add_argument("--update-freq", type=int, default=1, help="steps an update [1]")
    g.add_argument("--warmup-updates", type=int)
    g.add_argument("--weight-decay", type=float)
    g.add_argument("--dropout", type=float, default=0.1)
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--cpu", action="store_true", help="on the CPU even with a GPU")
    g.add_argument("--jobs", type=int, default=1, help="rows fine-tuned side by side [1]")
    return p


def _paths(value: str, flag: str) -> Tuple[str, ...]:
    paths = tuple(value.split(","))
    for path in paths:
        if not os.path.isfile(path):
            raise VecoUserError(f"{flag} {value}: no such file {path or '(empty)'}")
    return paths


def _in_data(data: str, pattern: str) -> List[str]:
    return sorted(glob.glob(os.path.join(glob.escape(data), pattern)))


def retrieval_files(args: argparse.Namespace) -> Files:
    """Tatoeba: ``--test LANG=XXX_FILE,ENG_FILE``, or ``--test LANG`` / every one of
    XTREME's languages found in ``--data`` (LASER's ``data/tatoeba/v1``)."""
    from ..corpora.tatoeba import available, laser_files

    for flag in ("train", "dev"):
        if getattr(args, flag):
            raise VecoUserError(f"--{flag}: {args.task} fine-tunes nothing: leave it out")
    if args.data and not os.path.isdir(args.data):
        raise VecoUserError(f"--data {args.data}: no such directory")
    tests: Dict[str, Tuple[str, ...]] = {}
    for value in args.test or (available(args.data) if args.data else []):
        lang, sep, files = value.partition("=")
        if not sep and not args.data:
            raise VecoUserError(f"--test {value}: give LANG=XXX_FILE,ENG_FILE, or --data DIR")
        paths = _paths(files, f"--test {lang}=") if sep else laser_files(args.data, lang)
        if len(paths) != 2:
            raise VecoUserError(f"--test {value}: expected LANG=XXX_FILE,ENG_FILE")
        tests[lang] = _paths(",".join(paths), f"--test {lang}")
    if not tests:
        where = f" (--data {args.data} has no tatoeba.<xxx>-eng.* pair)" if args.data else ""
        raise VecoUserError(f"--test LANG=XXX_FILE,ENG_FILE or --data DIR is needed{where}")
    return Files((), (), tests)


def bucc_files(args: argparse.Namespace) -> Files:
    """BUCC: ``--data`` (XTREME's bucc2018 folder) and ``--test LANG`` (default: those of
    de, fr, ru, zh whose sample split is there); the test gold is needed for the table."""
    from ..corpora.bucc import LANGS, path

    if not args.data or not os.path.isdir(args.data):
        raise VecoUserError(f"--task {args.task} needs --data DIR (XTREME's bucc2018 folder)")
    langs = args.test or [
        lang for lang in LANGS if os.path.isfile(path(args.data, lang, "dev", "gold"))
    ]
    if not langs:
        raise VecoUserError(f"--data {args.data} has no xx-en.dev.gold of {', '.join(LANGS)}")
    for lang in langs:
        if lang not in LANGS:
            raise VecoUserError(f"--test {lang}: BUCC 2018's languages are {', '.join(LANGS)}")
        gold = path(args.data, lang, "test", "gold")
        if not os.path.isfile(gold):
            raise VecoUserError(
                f"{gold}: no such file: XTREME's download withholds BUCC's test gold; put BUCC "
                "2018's training gold there, or score the sample set alone with veco-bucc-eval"
            )
    return Files((), (), {lang: () for lang in langs}, data=args.data)


def files_from(args: argparse.Namespace, recipe: Recipe) -> Files:
    """--train/--dev/--test, completed from --data."""
    if recipe.test_format == "bucc":
        return bucc_files(args)
    if not recipe.finetune:
        return retrieval_files(args)
    train, dev, tests = args.train, args.dev, list(args.test)
    if args.data:
        if not os.path.isdir(args.data):
            raise VecoUserError(f"--data {args.data}: no such directory")
        for flag, name in (("--train", "train-en"), ("--dev", "dev-en")):
            found = _in_data(args.data, f"{name}.*")
            if len(found) > 1:
                raise VecoUserError(
                    f"--data {args.data} holds {len(found)} {name}.* files: give {flag} FILE"
                )
            if found and getattr(args, flag[2:]) is None:
                train, dev = (found[0], dev) if flag == "--train" else (train, found[0])
        if not args.test:
            found = _in_data(args.data, "test-*.*")  # English first, then by name
            by_lang: Dict[str, List[str]] = {}
            for path in sorted(found, key=lambda p: not os.path.basename(p).startswith("test-en.")):
                by_lang.setdefault(os.path.basename(path)[len("test-") :].split(".")[0], []).append(
                    path
                )
            for lang, paths in by_lang.items():
                if len(paths) > 1:
                    names = ", ".join(os.path.basename(p) for p in paths)
                    raise VecoUserError(
                        f"--data {args.data} holds {len(paths)} test-{lang}.* files ({names}): "
                        f"give --test {lang}=FILE (and --test for each other language), or "
                        f"keep one test-{lang}.* there"
                    )
                tests.append(f"{lang}={paths[0]}")
    for flag, value in (("--train", train), ("--dev", dev)):
        if value is None:
            where = f" (--data {args.data} has no {flag[2:]}-en.*)" if args.data else ""
            raise VecoUserError(f"{flag} is needed{where}: the English {flag[2:]} file(s)")
    if not tests:
        where = f" (--data {args.data} has no test-LANG.*)" if args.data else ""
        raise VecoUserError(f"--test LANG=FILE is needed{where}: the test files, one per language")
    parsed: Dict[str, Tuple[str, ...]] = {}
    for value in tests:
        lang, sep, files = value.partition("=")
        if not sep or not lang or not files:
            raise VecoUserError(f"--test {value}: expected LANG=FILE[,FILE...]")
        if lang in parsed:
            raise VecoUserError(f"--test {value}: {lang} is given twice: one --test per language")
        parsed[lang] = _paths(files, f"--test {lang}=")
        if recipe.test_format == "squad" and len(parsed[lang]) > 1:
            raise VecoUserError(f"--test {value}: one SQuAD JSON file per language")
    return Files(_paths(train, "--train"), _paths(dev, "--dev"), parsed)


def check_tests(recipe: Recipe, files: Files) -> None:
    """Read the test files now, not after fine-tuning: unlabelled, unscorable or broken
    ones are refused before any work."""
    if recipe.test_format == "tagged":
        from ..corpora.tagging import read_tagged

        for paths in files.tests.values():
            read_tagged(list(paths))
    elif recipe.test_format == "squad":
        from ..corpora.squad import read_squad

        for paths in files.tests.values():
            read_squad(paths[0])
    elif recipe.test_format == "tsv":
        from ..corpora.xtreme import read_tsv

        for lang, paths in files.tests.items():
            read_tsv(paths[0], recipe.layout, lang)
    elif recipe.test_format == "retrieval":
        from ..corpora.tatoeba import read_pair

        for lang, paths in files.tests.items():
            read_pair(lang, *paths)
    elif recipe.test_format == "bucc":
        from ..corpora.bucc import read_split

        for lang in files.tests:
            for split in ("dev", "test"):
                read_split(files.data, lang, split)


def settings_from(args: argparse.Namespace, recipe: Recipe, extra: Sequence[str]) -> Settings:
    import torch

    for flag in ("epochs", "batch_size", "update_freq", "jobs"):
        check_at_least(getattr(args, flag), f"--{flag.replace('_', '-')}")
    check_at_least(args.warmup_updates, "--warmup-updates", 0)
    for flag, value, ok, wanted in (  # nan fails every comparison
        ("--lr", args.lr, lambda v: 0 < v < math.inf, "a positive number"),
        ("--weight-decay", args.weight_decay, lambda v: 0 <= v < math.inf, "0 or more"),
        ("--dropout", args.dropout, lambda v: 0 <= v < 1, "a number in [0, 1)"),
    ):
        if value is not None and not ok(value):
            raise VecoUserError(f"{flag} {value}: give {wanted}")
    if args.max_length is not None and not recipe.max_length:
        raise VecoUserError(f"--max-length: {recipe.task} fine-tunes nothing: leave it out")
    check_at_least(args.max_length, "--max-length", 3)
    for flag in ("max_question", "doc_stride"):
        if getattr(args, flag) is not None and recipe.test_format != "squad":
            raise VecoUserError(f"--{flag.replace('_', '-')}: for --task xquad only")
        check_at_least(getattr(args, flag), f"--{flag.replace('_', '-')}")
    gpus = 0 if args.cpu else torch.cuda.device_count()
    pick = lambda value, default: default if value is None else value  # noqa: E731
    s = Settings(
        lr=args.lr,
        epochs=pick(args.epochs, recipe.epochs),
        max_length=pick(args.max_length, recipe.max_length),
        max_question=pick(args.max_question, recipe.max_question),
        doc_stride=pick(args.doc_stride, recipe.doc_stride),
        batch_size=pick(args.batch_size, recipe.batch_size),
        update_freq=args.update_freq,
        warmup_updates=pick(args.warmup_updates, recipe.warmup_updates),
        weight_decay=pick(args.weight_decay, recipe.weight_decay),
        seed=args.seed,
        dropout=args.dropout,
        cpu=gpus == 0,
        gpus=gpus,
        fairseq_flags=tuple(extra),
    )
    s.step_batch  # refuses a batch that does not divide over the processes
    return s


def rows_from(args: argparse.Namespace, s: Settings) -> List[Pretrained]:
    rows: List[Pretrained] = []
    for value in args.checkpoint:
        name, path = parse_checkpoint(value, [r.name for r in rows])
        row = describe(name, path, args.spm_model, args.dict)
        if s.max_length > row.positions:
            raise VecoUserError(
                f"--max-length {s.max_length}: --checkpoint {value} reads at most "
                f"{row.positions} positions: pass --max-length {row.positions} (or less)"
            )
        rows.append(row)
    if args.random_baseline and not RECIPES[args.task].finetune:
        raise VecoUserError(
            f"--random-baseline: {args.task} scores pre-trained checkpoints as they are: leave it "
            "out"
        )
    if args.random_baseline:
        name = "random"
        if name in [r.name for r in rows]:
            raise VecoUserError(
                "--random-baseline adds the row 'random': name that --checkpoint otherwise"
            )
        rows.append(random_twin(rows[0], name))
    return rows


def check_out(out: str) -> None:
    if os.path.exists(out) and not os.path.isdir(out):
        raise VecoUserError(f"--out {out} is a file: give a run directory (new, or to resume)")


def run_task(args: argparse.Namespace, extra: Sequence[str]) -> Tuple[int, Dict[str, Dict]]:
    """One task's table; its status, and its scores per row (``{metric: {lang: value}}``)."""
    recipe = RECIPES[args.task]
    check_out(args.out)
    files = files_from(args, recipe)
    s = settings_from(args, recipe, extra)
    rows = rows_from(args, s)
    if recipe.finetune:
        check_fairseq_flags(finetune_command(recipe, rows[0], args.out, args.out, s))
    elif extra:
        raise VecoUserError(f"{' '.join(extra)}: {recipe.task} runs no fairseq-train: leave it out")
    check_tests(recipe, files)
    device = f"{s.gpus} GPU(s)" if s.gpus else "the CPU"
    print(f"== {PROG} {recipe.task}: {len(rows)} row(s) on {device}, results in {args.out}")
    stages = pipelines(recipe, rows, files, args.out, s)
    status = run_resumable(args.out, args.jobs, PROG, lambda r: r.run_pipelines(stages))
    if status:
        return status, {}
    langs = list(files.tests)
    scores = {
        r.name: report.read_scores(recipe, scores_path(args.out, r.name), r.name, langs)
        for r in rows
    }
    about = {"checkpoints": {r.name: r.path or "random initialization" for r in rows}}
    print("\n" + report.write(args.out, recipe, scores, langs, about))
    print(f"== written: {args.out}/results.md, results.json, results.png")
    return 0, scores


def run_all(args: argparse.Namespace, extra: Sequence[str]) -> int:
    """Every task whose folder is under ``--data`` (``DATA/<task>``: that task's ``--data``),
    one after the other into ``OUT/<task>``, then XTREME's summary (OUT/results.*). A
    re-run resumes task by task (each task's stamps); ``--max-length`` goes to the tasks
    that fine-tune, ``--max-question``/``--doc-stride`` to QA, fairseq-train's flags to the
    tasks that fine-tune."""
    if not args.data or not os.path.isdir(args.data):
        raise VecoUserError(
            f"--task {ALL} needs --data DIR with a folder per task ({', '.join(summary.TASKS)})"
        )
    for flag in ("train", "dev", "test"):
        if getattr(args, flag):
            raise VecoUserError(f"--{flag}: files of one task: run that --task alone")
    tasks = [t for t in summary.TASKS if os.path.isdir(os.path.join(args.data, t))]
    if not tasks:
        raise VecoUserError(
            f"--data {args.data} holds none of XTREME's task folders ({', '.join(summary.TASKS)})"
        )
    check_out(args.out)
    print(f"== {PROG} {ALL}: {', '.join(tasks)} (from {args.data})")
    results: Dict[str, Dict[str, Dict]] = {}
    for task in tasks:
        finetune = RECIPES[task].finetune
        one = argparse.Namespace(**vars(args))
        one.task, one.data, one.out = (
            task,
            os.path.join(args.data, task),
            os.path.join(args.out, task),
        )
        one.random_baseline = args.random_baseline and finetune
        # the length settings go to the tasks that fine-tune (tagging, QA, sentence pairs)
        if not RECIPES[task].max_length:
            one.max_length = None
        if RECIPES[task].test_format != "squad":
            one.max_question = one.doc_stride = None
        status, scores = run_task(one, extra if finetune else ())
        if status:
            return status
        for name, by_metric in scores.items():
            results.setdefault(name, {})[task] = by_metric
    rows = {name: summary.summarize(by_task) for name, by_task in results.items()}
    table = summary.markdown(rows)
    write_text(os.path.join(args.out, "results.md"), table)
    write_text(os.path.join(args.out, "results.json"), json.dumps(summary.as_json(rows), indent=2))
    report.plot_summary(rows, os.path.join(args.out, "results.png"))
    print("\n" + table)
    print(f"== written: {args.out}/results.md, results.json, results.png")
    return 0


def main(args: argparse.Namespace, extra: Sequence[str] = ()) -> int:
    if args.task == ALL:
        return run_all(args, extra)
    return run_task(args, extra)[0]


def split_argv(argv: Sequence[str]) -> Tuple[List[str], List[str]]:
    """``veco-xtreme`` flags, and fairseq-train's after ``--``."""
    argv = list(argv)
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], argv[at + 1 :]
    return argv, []


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    own, extra = split_argv(sys.argv[1:] if argv is None else argv)
    status: List[int] = []
    run_cli(PROG, get_parser, lambda a: status.append(main(a, extra)), PipelineError, own)
    sys.exit(status[0] if status else 0)


if __name__ == "__main__":
    cli_main()
