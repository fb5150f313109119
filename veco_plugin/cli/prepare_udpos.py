"""``veco-prepare-udpos``: XTREME's ``udpos`` folder from a folder of UD treebanks, offline,
test labels kept.

::

    veco-prepare-udpos --ud ud-treebanks-v2.5 --output data/udpos
    veco-prepare-udpos --ud ud-treebanks-v2.7 --output data/udpos-r --languages lt,pl,uk,wo,ro

``--ud``: a folder of ``UD_<Language>-<Treebank>/*.conllu`` (XTREME takes its languages
from UD 2.5, XTREME-R's five from UD 2.7). Writes ``<split>-<lang>.tsv`` for every split a
language has (``train-en.tsv``, ``dev-en.tsv``, ``test-de.tsv`` pooling every ``de_*``
treebank, ...), as XTREME's ``download_data.sh`` does, with labels everywhere
(:mod:`veco_plugin.corpora.udpos_layout`).
"""

import argparse
import json
from typing import Optional, Sequence

from ..corpora.udpos_layout import XTREME_LANGUAGES, write_udpos
from ..errors import VecoUserError
from ..outputs import check_output_dir, staged_dir
from .common import run_cli

PROG = "veco-prepare-udpos"


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        epilog=(
            "example: veco-prepare-udpos --ud ud-treebanks-v2.5 --output udpos " "--languages de,fr"
        ),
        prog=PROG,
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--ud", required=True, help="folder of UD_<Language>-<Treebank> folders")
    p.add_argument("--output", required=True, help="folder to write (new or empty)")
    p.add_argument(
        "--languages",
        default=",".join(XTREME_LANGUAGES["2.5"]),
        help="comma-separated language codes of the file names (default: XTREME's 33, "
        "taken from UD 2.5; XTREME-R's from UD 2.7: lt,pl,uk,wo,ro)",
    )
    return p


def main(args: argparse.Namespace) -> None:
    languages = args.languages.split(",")
    if "" in languages:
        raise VecoUserError(f"--languages {args.languages!r}: expected codes such as en,de,fr")
    check_output_dir(args.output, "--output", overwrite=False, refill="give a new directory")
    with staged_dir(args.output) as stage:
        written = write_udpos(args.ud, languages, stage)
    print(json.dumps(written, indent=2))


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    run_cli(PROG, get_parser, main, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
