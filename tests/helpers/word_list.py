"""A resolved bilingual word list over the toy vocabulary (``tests.helpers.toy``)."""

from tests.helpers.toy import toy_dictionary
from veco_plugin.data.bilingual_dictionary import ResolvedDictionary, save_resolved


def toy_word_list(path) -> None:
    """Three entries, a two-piece word among them, written as ``align_dictionary.tsv``
    (what ``--align-dictionary`` reads as is)."""
    d = toy_dictionary()
    pairs = [(("w1",), ("w2",)), (("w3",), ("w4", "w5")), (("w6",), ("w7",))]
    ids = [(tuple(map(d.index, s)), tuple(map(d.index, t))) for s, t in pairs]
    words = [(" ".join(s), " ".join(t)) for s, t in pairs]
    save_resolved(ResolvedDictionary.from_pieces(words, ids, d.pad()), str(path))
