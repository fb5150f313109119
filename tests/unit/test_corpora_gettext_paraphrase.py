"""The gettext translation-or-hard-negative task: negatives from the same catalog,
translations swap the languages, zero-shot files in the other languages."""

import json
import random

from veco_plugin.corpora.gettext_paraphrase import (
    build,
    examples,
    hard_negatives,
    read_catalog_groups,
)
from veco_plugin.corpora.xtreme import read_tsv

DE = {
    "coreutils": [
        ("cannot open file", "Datei kann nicht geöffnet werden"),
        ("missing operand", "Fehlender Operand"),
        ("invalid option", "Ungültige Option"),
        ("write error on standard output", "Schreibfehler auf der Standardausgabe"),
    ],
    "gnupg": [
        ("bad passphrase", "Falsche Passphrase"),
        ("key not found", "Schlüssel nicht gefunden"),
        ("signature verified successfully", "Unterschrift erfolgreich geprüft"),
    ],
}
FR = {
    "tar": [
        ("cannot open file", "impossible d'ouvrir le fichier"),  # an English train sentence
        ("archive is compressed", "l'archive est compressée"),
        ("unexpected end of archive", "fin d'archive inattendue"),
    ],
}


def write_corpus(root, lang, catalogs):
    root.mkdir()
    pairs = [p for c in catalogs.values() for p in c]
    counts = {name: len(c) for name, c in catalogs.items()}
    for split in ("train", "valid", "test"):
        (root / f"{split}.en").write_text("".join(e + "\n" for e, _ in pairs))
        (root / f"{split}.{lang}").write_text("".join(t + "\n" for _, t in pairs))
    splits = {s: {"pairs": len(pairs), "catalogs": counts} for s in ("train", "valid", "test")}
    (root / "catalogs.json").write_text(json.dumps({"splits": splits}))
    return str(root)


def test_groups_follow_catalogs_json(tmp_path):
    groups = read_catalog_groups(write_corpus(tmp_path / "de", "de", DE), "de", "train")
    assert groups == [DE["coreutils"], DE["gnupg"]]


def test_hard_negatives_same_catalog_nearest_length():
    pairs = DE["coreutils"]
    links = hard_negatives(pairs, random.Random(0), candidates=16)
    assert [i for i, _ in links] == [0, 1, 2, 3]
    for i, j in links:
        assert i != j and pairs[j][1] != pairs[i][1]
        n = len(pairs[i][1].split())
        others = [len(t.split()) for k, (_, t) in enumerate(pairs) if k != i]
        assert abs(len(pairs[j][1].split()) - n) == min(abs(m - n) for m in others)


def test_examples_balanced_and_translations_swap_languages():
    rows, trans = examples([DE["coreutils"], DE["gnupg"]], random.Random(1))
    assert len(rows) == len(trans) == 14
    assert [e.label for e in rows] == ["1", "0"] * 7
    de_of = dict(DE["coreutils"] + DE["gnupg"])
    en_of = {t: e for e, t in de_of.items()}
    for e, t in zip(rows, trans):
        assert t.first == de_of[e.first] and t.second == en_of[e.second] and t.label == e.label
        assert (de_of[e.first] == e.second) == (e.label == "1")


def test_build_writes_en_training_and_zero_shot_files(tmp_path):
    de = write_corpus(tmp_path / "de", "de", DE)
    fr = write_corpus(tmp_path / "fr", "fr", FR)
    out = tmp_path / "task"
    counts = build({"de": de, "fr": fr}, "de", str(out), seed=3)
    assert counts["train.tsv"] == 14 and counts["test_fr.tsv"] == 4  # "cannot open file" dropped
    test_en = read_tsv(str(out / "test_en.tsv"), "pawsx")
    assert read_tsv(str(out / "test_de.trans.tsv"), "pawsx") == test_en
    fr_rows = read_tsv(str(out / "test_fr.tsv"), "pawsx")
    fr_side = {t for _, t in FR["tar"]}
    assert all(e.first in fr_side for e in fr_rows)  # French first, English candidates
    assert all(e.second != "cannot open file" for e in fr_rows)
