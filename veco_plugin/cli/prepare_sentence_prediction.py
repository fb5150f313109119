"""``veco-prepare-sentence-prediction``: XTREME TSVs -> ``veco_sentence_prediction`` DATA.

::

    python -m veco_plugin.cli.prepare_sentence_prediction --layout xnli \\
        --spm-model DATA/spm.model --dict DATA/dict.txt --output data/xnli-bin \\
        --split train=train-en.tsv,translate-train-de.tsv --split valid=dev-en.tsv \\
        --split test_de=test-de.tsv --split test_fr=test-fr.tsv

``--split NAME=TSV[,TRANSLATION_TSV]``: the translation (same layout, line-aligned) is
what plug-in fine-tuning pairs each example with. Layouts and the output:
:mod:`veco_plugin.corpora.xtreme`.
"""

import argparse
import json
from typing import Dict, Optional, Sequence, Tuple

from ..corpora.xtreme import LAYOUTS, prepare
from ..errors import VecoUserError
from .common import run_cli

PROG = "veco-prepare-sentence-prediction"


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--layout", required=True, choices=sorted(LAYOUTS))
    p.add_argument("--spm-model", required=True, help="sentencepiece model of the checkpoint")
    p.add_argument("--dict", required=True, help="dict.txt of the checkpoint")
    p.add_argument("--output", required=True, help="DATA directory to write")
    p.add_argument(
        "--split",
        action="append",
        required=True,
        metavar="NAME=TSV[,TRANSLATION_TSV]",
        help="a split to binarize (repeat; train is needed)",
    )
    return p


def parse_splits(values: Sequence[str]) -> Dict[str, Tuple[str, Optional[str]]]:
    splits: Dict[str, Tuple[str, Optional[str]]] = {}
    for value in values:
        name, sep, files = value.partition("=")
        if not sep or not name or not files:
            raise VecoUserError(f"--split {value}: expected NAME=TSV[,TRANSLATION_TSV]")
        tsv, _, translation = files.partition(",")
        splits[name] = (tsv, translation or None)
    return splits


def main(args: argparse.Namespace) -> None:
    report = prepare(args.output, parse_splits(args.split), args.layout, args.spm_model, args.dict)
    print(json.dumps(report, indent=2))


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    run_cli(PROG, get_parser, main, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
