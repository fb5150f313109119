"""XTREME's ``udpos`` folder built from a folder of UD treebanks, offline, labels kept.

XTREME's ``scripts/download_data.sh`` (``download_treebank``, ``download_udpos``) converts
every ``UD_<Language>-<Treebank>/<lang>_<treebank>-ud-<split>.conllu`` of a release whose
``<lang>`` (the file name up to its first ``_``) is one of the release's languages
(:data:`XTREME_LANGUAGES`), then ``utils_preprocess.py --task udpos`` pools, per
language, the files in the order of their names, each into the split its name contains
(``train``, else ``dev``, else ``test``; a file naming none is left out), and writes
``<split>-<lang>.tsv`` for every split that has sentences: ``word<TAB>UPOS`` a line, a
blank line between sentences, no blank line after the last (XTREME's download then drops
the test tags; here they stay). Each sentence is converted by
:func:`veco_plugin.corpora.tagging.conllu_sentences`; a file XTREME's converter stops on
(:class:`~veco_plugin.corpora.ud_xtreme.ConverterFailure`) is left out, as XTREME's data
lacks it, with one warning line.
"""

import glob
import logging
import os
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from ..errors import VecoUserError
from .tagging import TaggedSentence, conllu_sentences, format_tagged_tsv
from .ud_xtreme import ConverterFailure, conllu_language

logger = logging.getLogger("veco_plugin.corpora.udpos_layout")

SPLITS = ("train", "dev", "test")
# the languages XTREME takes from each UD release (download_data.sh): XTREME's from 2.5,
# the ones XTREME-R added from 2.7
XTREME_LANGUAGES: Dict[str, Tuple[str, ...]] = {
    "2.5": tuple(
        "af ar bg de el en es et eu fa fi fr he hi hu id it ja kk ko mr nl pt ru ta te th tl "
        "tr ur vi yo zh".split()
    ),
    "2.7": ("lt", "pl", "uk", "wo", "ro"),
}
FETCH = (
    "give the folder of an unpacked UD release (ud-treebanks-v2.5/, from "
    "lindat.mff.cuni.cz, or UniversalDependencies/UD_<Language>-<Treebank> at tag r2.5)"
)


def split_of(name: str) -> Optional[str]:
    """The split XTREME pools file ``name`` into: the first of train, dev, test it
    contains (``de_hdt-ud-train-a-1.conllu``: train), None for none."""
    return next((split for split in SPLITS if split in name), None)


def treebank_files(ud_dir: str, languages: Sequence[str]) -> Dict[str, List[str]]:
    """``{lang: [path, ...]}``: the ``*/*.conllu`` files of ``ud_dir`` of each language of
    ``languages``, in the order of their names (XTREME's pooling order)."""
    if not os.path.isdir(ud_dir):
        raise VecoUserError(f"--ud {ud_dir}: no such folder; {FETCH}")
    found: Dict[str, List[str]] = {lang: [] for lang in languages}
    for path in glob.glob(os.path.join(glob.escape(ud_dir), "*", "*.conllu")):
        lang = conllu_language(path)
        if lang in found:
            found[lang].append(path)
    missing = [lang for lang, paths in found.items() if not paths]
    if missing:
        raise VecoUserError(
            f"--ud {ud_dir}: no treebank (UD_*/{missing[0]}_*.conllu) for "
            f"{', '.join(missing)}; {FETCH}, or name fewer languages with --languages"
        )
    return {lang: sorted(paths, key=os.path.basename) for lang, paths in found.items()}


def language_splits(paths: Sequence[str]) -> Iterator[Tuple[str, List[TaggedSentence]]]:
    """(split, sentences) for each split of one language's ``paths`` that has sentences,
    the files pooled in order; a file XTREME's converter stops on left out."""
    pooled: Dict[str, List[TaggedSentence]] = {split: [] for split in SPLITS}
    for path in paths:
        split = split_of(os.path.basename(path))
        if split is None:
            logger.warning("%s: its name says no split (train, dev, test): left out", path)
            continue
        try:
            pooled[split].extend(conllu_sentences(path))
        except ConverterFailure as exc:
            logger.warning("%s: left out, as XTREME's converter stops on it (%s)", path, exc)
        except OSError as exc:
            raise VecoUserError(f"{path}: cannot be read ({exc.strerror}); {FETCH}") from None
    for split in SPLITS:
        if pooled[split]:
            yield split, pooled[split]


def format_udpos(sentences: Sequence[TaggedSentence]) -> str:
    """``sentences`` as XTREME writes a udpos file: without the last sentence's blank line."""
    return format_tagged_tsv(sentences)[: -len("\n")]


def write_udpos(ud_dir: str, languages: Sequence[str], out: str) -> Dict[str, int]:
    """Write ``<split>-<lang>.tsv`` under ``out`` (an existing folder) for ``languages``'
    treebanks under ``ud_dir``; ``{file name: sentences}``."""
    written: Dict[str, int] = {}
    for lang, paths in treebank_files(ud_dir, languages).items():
        for split, sentences in language_splits(paths):
            name = f"{split}-{lang}.tsv"
            with open(os.path.join(out, name), "w", encoding="utf-8", newline="\n") as f:
                f.write(format_udpos(sentences))
            written[name] = len(sentences)
    return written
