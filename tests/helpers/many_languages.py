"""A small veco_pretraining DATA of many languages of very different sizes, from the
gettext catalogs of this machine (real translated text: each entry of
``/usr/share/locale/<lang>/LC_MESSAGES/*.mo`` is an English msgid and its translation).

Whitespace tokens, a ``dict.txt`` of every token, binarized by fairseq-preprocess
(run in one interpreter, as ``tests.helpers.shards`` does)."""

import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

from fairseq.data import Dictionary

from veco_plugin.corpora.gettext import CorpusError, normalize_space, read_catalog

# fairseq-preprocess for each command line on stdin, in one interpreter (one import)
PREPROCESS = """
import sys
from fairseq import options
from fairseq_cli.preprocess import main
for line in sys.stdin:
    main(options.get_preprocessing_parser().parse_args(line.split()))
"""

LOCALES = Path("/usr/share/locale")


def catalog_pairs(lang: str, count: int) -> List[Tuple[str, str]]:
    """The first ``count`` distinct (English, ``lang``) entries of ``lang``'s catalogs
    (catalogs in name order), one-line, translated; fewer if the catalogs hold fewer."""
    pairs: List[Tuple[str, str]] = []
    seen = set()
    for path in sorted((LOCALES / lang / "LC_MESSAGES").glob("*.mo")):
        try:
            entries = read_catalog(path)
        except CorpusError:
            continue
        for msgid, msgstr in entries:
            en, x = normalize_space(msgid), normalize_space(msgstr)
            if en and x and en != x and x not in seen:
                seen.add(x)
                pairs.append((en, x))
                if len(pairs) == count:
                    return pairs
    return pairs


def _write(path: str, lines: List[str]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)


def build_many_languages(
    out: str, mono: Dict[str, int], bi: Dict[str, int]
) -> Tuple[str, Dict[str, int], Dict[str, int]]:
    """``out/DATA`` with ``mono/<lang>`` (``mono[lang]`` lines) and ``bi/en-<lang>``
    (``bi[lang]`` pairs), train split only. Returns DATA and the lines/pairs each
    language and pair really got (a language's catalogs may hold fewer)."""
    data, text = os.path.join(out, "DATA"), os.path.join(out, "text")
    os.makedirs(text, exist_ok=True)
    os.makedirs(data, exist_ok=True)
    dictionary = Dictionary()
    got_mono, got_bi, commands = {}, {}, []
    srcdict = os.path.join(data, "dict.txt")
    for lang, count in mono.items():
        lines = [x for _, x in catalog_pairs(lang, count)]
        got_mono[lang] = len(lines)
        _write(os.path.join(text, f"mono.{lang}"), lines)
        commands.append(
            f"--only-source --srcdict {srcdict} --trainpref {text}/mono.{lang} "
            f"--destdir {data}/mono/{lang}"
        )
        for line in lines:
            dictionary.encode_line(line, add_if_not_exist=True)
    for lang, count in bi.items():
        pairs = catalog_pairs(lang, count)
        got_bi[f"en-{lang}"] = len(pairs)
        prefix = os.path.join(text, f"bi-{lang}")
        _write(f"{prefix}.en", [en for en, _ in pairs])
        _write(f"{prefix}.{lang}", [x for _, x in pairs])
        commands.append(
            f"--source-lang en --target-lang {lang} --srcdict {srcdict} --tgtdict {srcdict} "
            f"--trainpref {prefix} --destdir {data}/bi/en-{lang}"
        )
        for pair in pairs:
            for line in pair:
                dictionary.encode_line(line, add_if_not_exist=True)
    dictionary.save(srcdict)
    subprocess.run(
        [sys.executable, "-c", PREPROCESS],
        input="\n".join(commands) + "\n",
        text=True,
        check=True,
        capture_output=True,
    )
    return data, got_mono, got_bi
