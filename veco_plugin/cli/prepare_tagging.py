"""``veco-prepare-tagging``: tagged files (CoNLL-U, ``word<TAB>tag``) -> ``veco_tagging`` DATA.

::

    veco-prepare-tagging --spm-model PRE/spm.model --dict PRE/dict.txt --output data/udpos-bin \\
        --split train=UD_English-EWT/en_ewt-ud-train.conllu,UD_English-GUM/en_gum-ud-train.conllu \\
        --split valid=en_ewt-ud-dev.conllu --split test_de=de_gsd-ud-test.conllu

``--split NAME=FILE[,FILE...]``: the files of a split, pooled in order (a language's
treebanks). Formats, conventions and the output: :mod:`veco_plugin.corpora.tagging` and
:mod:`veco_plugin.corpora.tagging_data`.
"""

import argparse
import json
from typing import Optional, Sequence

from ..corpora.tagging_data import prepare_tagging
from ..errors import VecoUserError
from .common import parse_split_files, run_cli

PROG = "veco-prepare-tagging"


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        epilog=(
            "example: veco-prepare-tagging --spm-model PRE/spm.model --dict PRE/dict.txt "
            "--output data/udpos-bin --split train=udpos/train-en.tsv --split "
            "valid=udpos/dev-en.tsv"
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
        metavar="NAME=FILE[,FILE...]",
        help="a split to binarize (repeat; train is needed; its files pooled in order)",
    )
    p.add_argument(
        "--max-length",
        type=int,
        default=128,
        help="positions of a window with <s> and </s> (XTREME: 128); longer sentences are "
        "cut between words into consecutive windows [%(default)s]",
    )
    return p


def main(args: argparse.Namespace) -> None:
    splits = parse_split_files(args.split)
    report = prepare_tagging(args.output, splits, args.spm_model, args.dict, args.max_length)
    print(json.dumps(report, indent=2))


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    run_cli(PROG, get_parser, main, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
