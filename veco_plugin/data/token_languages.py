"""``--token-languages FILE``: each token's language, for ``--language-embeddings``
(:mod:`veco_plugin.modules.language_embedding`).

One ``TOKEN LANG`` a line (whitespace-separated, ``dict.txt``'s token spelling; e.g.
``veco-derived-transfer``'s ``OUT/data/<t>/languages.txt``): ``LANG`` one of the
task's ``--mono-langs``, whose position there is the language's index. A token the file
does not list has no language. A token the ``Dictionary`` lacks, a special one, one
listed twice, another language or a malformed line is an error naming the file and line.
"""

from typing import Sequence

import torch
from fairseq.data import Dictionary

from ..errors import VecoUserError
from ..modules.language_embedding import NO_LANGUAGE


def read_token_languages(path: str, dictionary: Dictionary, langs: Sequence[str]) -> torch.Tensor:
    """``path`` -> (V,) long: each token's index in ``langs``, or ``NO_LANGUAGE``."""
    flag = f"--token-languages {path}"
    index = {lang: i for i, lang in enumerate(langs)}
    specials = {dictionary.bos(), dictionary.pad(), dictionary.eos(), dictionary.unk()}
    table = torch.full((len(dictionary),), NO_LANGUAGE, dtype=torch.long)
    try:
        f = open(path, encoding="utf-8")
    except OSError as exc:
        raise VecoUserError(f"{flag}: {exc.strerror}") from None
    with f:
        for number, line in enumerate(f, start=1):
            where = f"{flag}:{number}"
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 2:
                raise VecoUserError(f"{where}: give 'TOKEN LANG', got {len(fields)} fields")
            token, lang = fields
            if lang not in index:
                raise VecoUserError(
                    f"{where}: language {lang!r} is not one of --mono-langs {','.join(langs)}"
                )
            tid = dictionary.index(token)
            if tid == dictionary.unk() and token != dictionary.unk_word:
                raise VecoUserError(f"{where}: {token!r} is not in the dictionary (dict.txt)")
            if tid in specials or token.startswith("<") and token.endswith(">"):
                raise VecoUserError(f"{where}: {token!r} is a special token: it has no language")
            if table[tid] != NO_LANGUAGE:
                raise VecoUserError(f"{where}: {token!r} is listed twice")
            table[tid] = index[lang]
    if table.eq(NO_LANGUAGE).all():
        raise VecoUserError(f"{flag}: no 'TOKEN LANG' line: give each token's language")
    return table
