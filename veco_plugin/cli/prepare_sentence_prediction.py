"""``veco-prepare-sentence-prediction``: XTREME TSVs -> ``veco_sentence_prediction`` DATA.

::

    python -m veco_plugin.cli.prepare_sentence_prediction --layout xnli \\
        --spm-model DATA/spm.model --dict DATA/dict.txt --output data/xnli-bin \\
        --split train=train-en.tsv,translate-train-de.tsv --split valid=dev-en.tsv \\
        --split test_de=test-de.tsv --split test_fr=test-fr.tsv

``--split NAME=TSV[,TRANSLATION_TSV]``: the translation (same layout, line-aligned) is
what plug-in fine-tuning pairs each example with. ``--language NAME=LANG``: split NAME's
rows in LANG, where its file has a ``language`` column (XNLI-1.0's ``xnli.{dev,test}.tsv``
hold every language); a file without one is taken as written in LANG. With XNLI-1.0 and
XTREME's processed train file::

    python -m veco_plugin.cli.prepare_sentence_prediction --layout xnli ... \\
        --split train=xnli/train-en.tsv --split valid=XNLI-1.0/xnli.dev.tsv \\
        --language valid=en --split test_de=XNLI-1.0/xnli.test.tsv --language test_de=de

Layouts (each recognises its files' shapes: XTREME's processed TSVs, the original
releases; an unlabelled XTREME test file is refused) and the output:
:mod:`veco_plugin.corpora.xtreme`.
"""

import argparse
import json
from typing import Dict, Optional, Sequence, Tuple

from ..corpora.xtreme import LAYOUTS, PAIR_SPECIALS, prepare
from ..errors import VecoUserError
from .common import check_at_least, check_split_name, run_cli

PROG = "veco-prepare-sentence-prediction"


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        epilog=(
            "example: veco-prepare-sentence-prediction --layout xnli --spm-model "
            "PRE/spm.model --dict PRE/dict.txt --output data/xnli-bin --split "
            "train=train-en.tsv --split test_de=test-de.tsv"
        ),
        prog=PROG,
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--layout", required=True, choices=sorted(LAYOUTS))
    p.add_argument("--spm-model", required=True, help="sentencepiece model of the checkpoint")
    p.add_argument("--dict", required=True, help="dict.txt of the checkpoint")
    p.add_argument(
        "--output",
        required=True,
        help="DATA directory to write (new, or one made with the same --dict and labels: "
        "the splits are added)",
    )
    p.add_argument(
        "--split",
        action="append",
        required=True,
        metavar="NAME=TSV[,TRANSLATION_TSV]",
        help="a split to binarize (repeat; train is needed)",
    )
    p.add_argument(
        "--max-length",
        type=int,
        default=0,
        help="positions of an example, <s> and </s> included: the longer side cut first, as "
        "XTREME cuts pairs (its scripts: 128) [0: none; fairseq-train's --shorten-method cuts "
        "at the model's positions]",
    )
    p.add_argument(
        "--language",
        action="append",
        default=[],
        metavar="NAME=LANG",
        help="split NAME's rows in LANG where its file names each row's language (XNLI-1.0's "
        "xnli.dev.tsv / xnli.test.tsv); repeat per split",
    )
    return p


def parse_splits(values: Sequence[str]) -> Dict[str, Tuple[str, Optional[str]]]:
    """``--split NAME=TSV[,TRANSLATION_TSV]`` values as ``{NAME: (TSV, TRANSLATION_TSV)}``;
    a split named twice, a name that is no file prefix or more than two files is refused."""
    splits: Dict[str, Tuple[str, Optional[str]]] = {}
    for value in values:
        name, sep, files = value.partition("=")
        if not sep or not name or not files:
            raise VecoUserError(f"--split {value}: expected NAME=TSV[,TRANSLATION_TSV]")
        check_split_name(value, name, splits)
        tsv, *translation = files.split(",")
        if len(translation) > 1 or not tsv:
            raise VecoUserError(
                f"--split {value}: expected NAME=TSV[,TRANSLATION_TSV] (one TSV and at most "
                "one translation TSV, comma-separated)"
            )
        splits[name] = (tsv, translation[0] if translation and translation[0] else None)
    return splits


def parse_languages(values: Sequence[str]) -> Dict[str, str]:
    """``--language NAME=LANG`` values as ``{NAME: LANG}``; a split named twice is refused."""
    languages: Dict[str, str] = {}
    for value in values:
        name, sep, lang = value.partition("=")
        if not sep or not name or not lang.strip():
            raise VecoUserError(f"--language {value}: expected NAME=LANG (e.g. test_de=de)")
        if name in languages:
            raise VecoUserError(f"--language {name}= is given twice: give each split's once")
        languages[name] = lang.strip()
    return languages


def main(args: argparse.Namespace) -> None:
    splits, languages = parse_splits(args.split), parse_languages(args.language)
    if args.max_length:
        check_at_least(args.max_length, "--max-length", PAIR_SPECIALS + 2)
    report = prepare(
        args.output, splits, args.layout, args.spm_model, args.dict, languages, args.max_length
    )
    print(json.dumps(report, indent=2))


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    run_cli(PROG, get_parser, main, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
