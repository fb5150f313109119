"""``veco-prepare-span-qa``: SQuAD-format JSON (SQuAD v1.1, XQuAD, MLQA) -> ``veco_span_qa``
DATA.

::

    veco-prepare-span-qa --spm-model PRE/spm.model --dict PRE/dict.txt --output data/squad-bin \\
        --split train=train-v1.1.json --split valid=dev-v1.1.json

Windows as XTREME's ``run_squad.py`` cuts them (:mod:`veco_plugin.data.qa_windows`); the
output: :mod:`veco_plugin.corpora.span_qa_data`.
"""

import argparse
import json
from typing import Optional, Sequence

from ..corpora.span_qa_data import prepare_span_qa
from ..data.qa_windows import QaWindowSettings
from ..errors import VecoUserError
from .common import run_cli, single_files

PROG = "veco-prepare-span-qa"


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        epilog=(
            "example: veco-prepare-span-qa --spm-model PRE/spm.model --dict PRE/dict.txt "
            "--output data/qa-bin --split train=squad-train.json --split "
            "valid=xquad.en.json"
        ),
        prog=PROG,
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--spm-model", required=True, help="sentencepiece model of the checkpoint")
    p.add_argument("--dict", required=True, help="dict.txt of the checkpoint")
    p.add_argument("--output", required=True, help="DATA directory to write (new)")
    p.add_argument(
        "--split",
        action="append",
        required=True,
        metavar="NAME=FILE.json",
        help="a split to binarize (repeat; train is needed)",
    )
    p.add_argument(
        "--max-length", type=int, default=384, help="positions of a window [%(default)s]"
    )
    p.add_argument(
        "--max-question", type=int, default=64, help="question pieces kept [%(default)s]"
    )
    p.add_argument(
        "--doc-stride",
        type=int,
        default=128,
        help="context pieces between window starts [%(default)s]",
    )
    return p


def main(args: argparse.Namespace) -> None:
    try:
        settings = QaWindowSettings(args.max_length, args.max_question, args.doc_stride)
    except VecoUserError as exc:
        raise VecoUserError(f"--doc-stride/--max-length/--max-question: {exc}") from None
    splits = single_files(args.split, "--split")
    report = prepare_span_qa(args.output, splits, args.spm_model, args.dict, settings)
    print(json.dumps(report, indent=2))


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    run_cli(PROG, get_parser, main, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
