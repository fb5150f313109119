"""``veco-xquad-split``: XQuAD's files -> a disjoint English train/dev and a zero-shot test in
every language, in ``veco-xtreme --data``'s layout (the SQuAD stand-in:
:mod:`veco_plugin.corpora.xquad_split`).

::

    veco-xquad-split --xquad xquad/ --out data/xquad-split     # 36 / 4 / 8 articles
    veco-xtreme --task xquad --checkpoint veco=PRE.pt --data data/xquad-split --out runs/xquad
"""

import argparse
import json
from typing import Optional, Sequence

from ..corpora.xquad_split import split_xquad
from ..errors import VecoUserError
from .common import run_cli

PROG = "veco-xquad-split"


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        epilog="example: veco-xquad-split --xquad xquad/ --out data/xquad-split",
        prog=PROG,
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--xquad", required=True, help="folder of xquad.<lang>.json (deepmind/xquad)")
    p.add_argument("--out", required=True, help="folder to write (new or empty)")
    p.add_argument("--dev-articles", type=int, default=4, help="[%(default)s]")
    p.add_argument("--test-articles", type=int, default=8, help="[%(default)s]")
    return p


def main(args: argparse.Namespace) -> None:
    counts = split_xquad(args.xquad, args.out, args.dev_articles, args.test_articles)
    print(json.dumps(counts, indent=2))


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    run_cli(PROG, get_parser, main, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
