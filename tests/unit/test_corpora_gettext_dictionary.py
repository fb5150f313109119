"""veco-gettext-dictionary: single-word catalog entries -> a MUSE-style word list, split by
English word; on hand-made .mo files and (when present) the system's German catalogs."""

import json
from pathlib import Path

import pytest

from tests.helpers.catalogs import write_mo
from veco_plugin.cli import gettext_dictionary as cli
from veco_plugin.corpora.gettext_dictionary import (
    DictionaryConfig,
    cleaning_config,
    split_by_word,
    word_pair,
)

SYSTEM_DE = Path("/usr/share/locale/de/LC_MESSAGES")
CFG = DictionaryConfig("de", Path("unused"))


@pytest.mark.parametrize(
    "msgid,msgstr,pair,reason",
    [
        ("_File", "_Datei", ("file", "datei"), None),  # accelerators, lowercase
        ("Open…", "Öffnen …", ("open", "öffnen"), None),  # edge punctuation
        ("Settings:", "Einstellungen:", ("settings", "einstellungen"), None),
        ("Save as", "Speichern unter", ("save as", "speichern unter"), "not_a_word"),
        ("Print", "Print", ("print", "print"), "untranslated"),
        ("Mail", "mail", ("mail", "mail"), "untranslated"),  # the same word but for case
        ("%s", "%s", ("%s", "%s"), "noise"),
        ("x86", "x86", ("x86", "x86"), "noise"),
        ("Files", "", ("files", ""), "untranslated"),
    ],
)
def test_word_pair(msgid, msgstr, pair, reason):
    assert word_pair(msgid, msgstr, CFG, cleaning_config(CFG)) == (pair, reason)


def test_keep_case():
    cfg = DictionaryConfig("de", Path("unused"), keep_case=True)
    assert word_pair("_File", "_Datei", cfg, cleaning_config(cfg)) == (("File", "Datei"), None)


def test_split_keeps_every_translation_of_a_word_on_one_side():
    pairs = {(f"w{i}", f"t{i}{k}") for i in range(40) for k in range(i % 3 + 1)}
    split = split_by_word(pairs, held_out_words=10, seed=3)
    words = {s: {en for en, _ in split[s]} for s in split}
    assert len(words["heldout"]) == 10 and len(words["train"]) == 30
    assert not words["heldout"] & words["train"]
    assert set(split["train"]) | set(split["heldout"]) == pairs
    assert split == split_by_word(pairs, 10, 3) and split != split_by_word(pairs, 10, 4)
    assert all(lst == sorted(lst) for lst in split.values())


def _run(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.cli_main([str(a) for a in argv])
        raise SystemExit(0)
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_cli_on_hand_made_catalogs(tmp_path, capsys):
    locale = tmp_path / "locale"
    words = {"_File": "_Datei", "Edit": "Bearbeiten", "Help": "Hilfe", "View": "Ansicht"}
    write_mo(locale / "de" / "LC_MESSAGES" / "a.mo", {**words, "Save as": "Speichern unter"})
    write_mo(locale / "de" / "LC_MESSAGES" / "b.mo", {"File": "Datei", "Edit": "Ändern"})
    out = tmp_path / "dict"
    code, stdout, _ = _run(
        ["--tgt-lang", "de", "--locale-dir", locale, "--output", out, "--held-out-words", 1],
        capsys,
    )
    assert code == 0, stdout
    train = (out / "train.txt").read_text(encoding="utf-8").splitlines()
    held = (out / "heldout.txt").read_text(encoding="utf-8").splitlines()
    every = sorted(train + held)
    assert every == sorted(
        ["file datei", "edit bearbeiten", "edit ändern", "help hilfe", "view ansicht"]
    )
    assert len({line.split()[0] for line in held}) == 1
    report = json.loads((out / "dictionary.json").read_text(encoding="utf-8"))
    assert report["entries"] == {
        "read": 7,
        "kept": 5,
        "not_a_word": 1,
        "duplicate": 1,
    }
    assert report["catalogs"] == 2 and "heldout: " in stdout


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--tgt-lang", "en"], "--tgt-lang must differ from the source language 'en'"),
        (["--tgt-lang", "xx"], "no catalogs found for language 'xx'"),
        (["--tgt-lang", "de", "--held-out-words", "-1"], "--held-out-words must be >= 0"),
    ],
)
def test_bad_flags_are_one_line(tmp_path, capsys, argv, message):
    locale = tmp_path / "locale"
    write_mo(locale / "de" / "LC_MESSAGES" / "a.mo", {"File": "Datei"})
    code, _, err = _run(argv + ["--locale-dir", locale, "--output", tmp_path / "o"], capsys)
    lines = [line for line in err.splitlines() if " | INFO | " not in line]
    assert code == 1 and len(lines) == 1 and message in lines[0], err
    assert lines[0].startswith("veco-gettext-dictionary: error: ")


@pytest.mark.skipif(not any(SYSTEM_DE.glob("*.mo")), reason="no German gettext catalogs")
def test_system_catalogs_give_thousands_of_real_word_pairs(tmp_path, capsys):
    out = tmp_path / "dict"
    code, stdout, _ = _run(["--tgt-lang", "de", "--output", out], capsys)
    assert code == 0, stdout
    train = [line.split(" ") for line in (out / "train.txt").read_text().splitlines()]
    held = [line.split(" ") for line in (out / "heldout.txt").read_text().splitlines()]
    assert len(train) + len(held) > 2000 and len({en for en, _ in held}) == 500
    assert ["file", "datei"] in train + held
    assert all(len(p) == 2 and p[0] != p[1] for p in train + held)
