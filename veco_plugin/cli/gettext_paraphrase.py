"""``veco-gettext-paraphrase``: a translation-or-hard-negative pair task from
``veco-gettext-corpus`` directories (rules: :mod:`veco_plugin.corpora.gettext_paraphrase`).

::

    veco-gettext-corpus --tgt-lang de --output data/gettext-en-de
    veco-gettext-corpus --tgt-lang fr --output data/gettext-en-fr
    python -m veco_plugin.cli.gettext_paraphrase --corpus de=data/gettext-en-de \\
        --corpus fr=data/gettext-en-fr --train-lang de --output data/paraphrase
    # -> train.tsv valid.tsv test_en.tsv test_de.tsv test_fr.tsv (+ .trans.tsv each)
"""

import argparse
import json
from typing import Dict, Optional, Sequence

from ..corpora.gettext_paraphrase import build
from ..errors import VecoUserError
from ..outputs import check_output_dir
from .common import run_cli

PROG = "veco-gettext-paraphrase"


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        epilog=(
            "example: veco-gettext-paraphrase --corpus de=data/gettext --output " "data/paraphrase"
        ),
        prog=PROG,
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--corpus", action="append", required=True, metavar="LANG=DIR")
    p.add_argument("--train-lang", default="de", help="corpus of train/valid/test_en")
    p.add_argument("--output", required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--candidates",
        type=int,
        default=16,
        help="random same-catalog draws a negative is picked from, nearest in length "
        "(1: a random same-catalog negative)",
    )
    p.add_argument("--max-train", type=int, default=None, help="pairs (2 examples each)")
    p.add_argument("--max-eval", type=int, default=None, help="pairs per held-out file")
    return p


def parse_corpora(values: Sequence[str]) -> Dict[str, str]:
    corpora: Dict[str, str] = {}
    for value in values:
        lang, sep, path = value.partition("=")
        if not sep or not lang or not path:
            raise VecoUserError(f"--corpus {value}: expected LANG=DIR")
        if lang in corpora:
            raise VecoUserError(
                f"--corpus {lang} given twice ({corpora[lang]}, {path}): one corpus a language"
            )
        corpora[lang] = path
    return corpora


def main(args: argparse.Namespace) -> None:
    check_output_dir(args.output, "--output")
    counts = build(
        parse_corpora(args.corpus),
        args.train_lang,
        args.output,
        args.seed,
        args.max_train,
        args.max_eval,
        args.candidates,
    )
    print(json.dumps(counts, indent=2))


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    run_cli(PROG, get_parser, main, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
