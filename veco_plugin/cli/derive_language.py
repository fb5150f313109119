"""``veco-derive-language``: English text and tagged English -> ALIGN-MLM's derived languages
(T_trans, T_inv, T_syn and their compositions), the joint and the bilingual dictionary.

::

    veco-derive-language --spm-model PRE/spm.model --dict PRE/dict.txt --output data/derived \\
        --text wiki.train.txt --tagged en_ewt-ud-train.conllu --tagged dev-en.tsv

writes (a new directory, written whole)::

    OUT/en/NAME                  the English text as pieces, one line a line
    OUT/en/STEM.tsv              the tagged English as word<TAB>tag
    OUT/<transform>/             the same files, derived (--transforms)
    OUT/dict.txt                 English rows + their copies (with T_trans)
    OUT/bilingual.txt            'piece copy' lines, --dictionary-coverage of the tokens
    OUT/syn-model.json           T_syn's ordering model (with syn), trained on --syn-treebank

T_syn (``syn``, ``trans_syn``) re-orders dependency trees: every ``--text`` and ``--tagged``
of such a run is CoNLL-U (a ``--text X.conllu`` is each tree's words a line, written as
``X.txt``), e.g.::

    veco-derive-language --spm-model en.model --output derived --transforms trans,trans_syn \\
        --text en_gum-ud-dev.conllu --tagged en_ewt-ud-dev.conllu \\
        --syn-treebank fr_sequoia-ud-train.conllu --syn-treebank fr_gsd-ud-dev.conllu

Definitions, the copy's form and the inversion rule: :mod:`veco_plugin.corpora.derived`.
"""

import argparse
import json
from typing import Optional, Sequence

from ..corpora.derived import DEFAULT_TRANSFORMS, TRANSFORMS, DeriveConfig, derive_language
from ..errors import VecoUserError
from .common import run_cli

PROG = "veco-derive-language"


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        epilog=(
            "example: veco-derive-language --spm-model en.model --output derived --text "
            "mono.en --tagged train-en.tsv"
        ),
        prog=PROG,
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--spm-model", required=True, help="sentencepiece model of English")
    p.add_argument(
        "--dict",
        help="English dict.txt of --spm-model (default: every piece of it but <unk> and the "
        "control symbols, count 1, as veco-spm writes it)",
    )
    p.add_argument("--output", required=True, help="directory to write (new or empty)")
    p.add_argument(
        "--text", action="append", default=[], metavar="FILE", help="English text (repeat)"
    )
    p.add_argument(
        "--tagged",
        action="append",
        default=[],
        metavar="FILE",
        help="tagged English, CoNLL-U (*.conllu) or word<TAB>tag (repeat)",
    )
    p.add_argument(
        "--transforms",
        default=",".join(DEFAULT_TRANSFORMS),
        help=f"comma-separated, of {', '.join(TRANSFORMS)}: trans a copy of every piece (a "
        "new script), inv the words of each sentence reversed, syn the dependents of each "
        "noun and verb re-ordered as French orders them (Wang & Eisner 2016), trans_* "
        "the re-ordering then the copies [%(default)s]",
    )
    p.add_argument(
        "--syn-treebank",
        action="append",
        default=[],
        metavar="FILE",
        help="CoNLL-U treebank of the target language (French) that T_syn's ordering model "
        "is trained on (repeat; needed with syn, trans_syn)",
    )
    p.add_argument(
        "--dictionary-coverage",
        type=float,
        default=0.25,
        help="fraction of the non-special tokens in the bilingual dictionary, drawn "
        "uniformly (ALIGN-MLM: 0.25) [%(default)s]",
    )
    p.add_argument("--seed", type=int, default=1, help="seed of the draw [%(default)s]")
    return p


def main(args: argparse.Namespace) -> None:
    cfg = DeriveConfig.from_flags(
        spm_model=args.spm_model,
        dictionary=args.dict,
        output=args.output,
        texts=args.text,
        tagged=args.tagged,
        transforms=args.transforms,
        coverage=args.dictionary_coverage,
        seed=args.seed,
        syn_treebanks=args.syn_treebank,
    )
    print(json.dumps(derive_language(cfg), indent=2))


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    run_cli(PROG, get_parser, main, VecoUserError, argv)


if __name__ == "__main__":
    cli_main()
