"""Resolved bilingual word lists over the toy vocabulary (``tests.helpers.toy``), and the
criteria that read them."""

from fairseq.criterions import CRITERION_DATACLASS_REGISTRY

from tests.helpers.toy import ToyTask, toy_dictionary
from veco_plugin.data.bilingual_dictionary import ResolvedDictionary, save_resolved
from veco_plugin.objectives import build_criterion, objective


def toy_word_list(path) -> None:
    """Three entries, a two-piece word among them, written as ``align_dictionary.tsv``
    (what ``--align-dictionary`` reads as is)."""
    d = toy_dictionary()
    pairs = [(("w1",), ("w2",)), (("w3",), ("w4", "w5")), (("w6",), ("w7",))]
    ids = [(tuple(map(d.index, s)), tuple(map(d.index, t))) for s, t in pairs]
    words = [(" ".join(s), " ".join(t)) for s, t in pairs]
    save_resolved(ResolvedDictionary.from_pieces(words, ids, d.pad()), str(path))


def table_criterion(name: str, d, tmp_path, **extra):
    """The criterion ``name`` with its objectives-table settings, its word lists (train,
    heldout) a toy list written to ``tmp_path`` and its save dir under it; ``extra``
    settings last."""
    pieces = [((5,), (6,)), ((7,), (8, 9)), ((10, 11), (12,))]
    words = [(f"s{i}", f"t{i}") for i in range(len(pieces))]
    for split in ("train", "heldout"):
        save_resolved(
            ResolvedDictionary.from_pieces(words, pieces, d.pad()), f"{tmp_path}/{split}.txt"
        )
    settings = objective(name).criterion_settings(word_list=str(tmp_path))
    if "save_dir" in CRITERION_DATACLASS_REGISTRY[name].__dataclass_fields__:
        settings["save_dir"] = str(tmp_path / "ck")
    return build_criterion(name, ToyTask(d), **settings, **extra)
