"""veco_plugin.corpora.gettext and veco-gettext-corpus on the real system catalogs and on
small hand-made .mo files."""

import json
from pathlib import Path
from typing import List

import pytest

from tests.helpers.catalogs import write_mo
from veco_plugin.cli import gettext_corpus
from veco_plugin.corpora import gettext as gc

SYSTEM_LOCALE = Path("/usr/share/locale")
HAS_SYSTEM_DE = any((SYSTEM_LOCALE / "de" / "LC_MESSAGES").glob("*.mo"))
needs_system_de = pytest.mark.skipif(
    not HAS_SYSTEM_DE, reason="no /usr/share/locale/de/LC_MESSAGES/*.mo on this machine"
)

# A quick system run: the first 20 catalogs in name order, small held-out targets.
SYSTEM_ARGS = [
    "--tgt-lang",
    "de",
    "--max-catalogs",
    "20",
    "--valid-size",
    "100",
    "--test-size",
    "200",
]


def cli_main(argv: List[str]) -> int:
    """The exit status of ``veco-gettext-corpus ARGV`` (run in this process)."""
    try:
        gettext_corpus.cli_main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def read_lines(path: Path) -> List[str]:
    raw = path.read_bytes()
    assert b"\r" not in raw, path
    text = raw.decode("utf-8")
    assert text.endswith("\n") or text == "", path
    lines = text.split("\n")[:-1]
    assert all(line.strip() == line and line for line in lines), f"empty/padded line in {path}"
    return lines


def load_split(out: Path, split: str, lang: str = "de"):
    en, x = read_lines(out / f"{split}.en"), read_lines(out / f"{split}.{lang}")
    assert len(en) == len(x), split
    return list(zip(en, x))


# ---------------------------------------------------------------- system catalogs


@pytest.fixture(scope="module")
def system_corpus(tmp_path_factory):
    if not HAS_SYSTEM_DE:
        pytest.skip("no /usr/share/locale/de/LC_MESSAGES/*.mo on this machine")
    out = tmp_path_factory.mktemp("gettext") / "de"
    assert cli_main(SYSTEM_ARGS + ["--output", str(out)]) == 0
    return out


@needs_system_de
def test_system_files_are_aligned_and_clean(system_corpus):
    report = json.loads((system_corpus / "catalogs.json").read_text(encoding="utf-8"))
    for split in gc.SPLITS:
        pairs = load_split(system_corpus, split)
        assert pairs, split
        assert len(pairs) == report["splits"][split]["pairs"]
        assert sum(report["splits"][split]["catalogs"].values()) == len(pairs)
    # Whole catalogs only: near, not at, the targets (100 and 200).
    assert 50 <= report["splits"]["valid"]["pairs"] <= 200
    assert 100 <= report["splits"]["test"]["pairs"] <= 400
    assert read_lines(system_corpus / "mono.de") == read_lines(system_corpus / "train.de")
    mono_en, train_en = read_lines(system_corpus / "mono.en"), read_lines(
        system_corpus / "train.en"
    )
    assert mono_en[: len(train_en)] == train_en


@needs_system_de
def test_system_splits_are_disjoint_by_catalog(system_corpus):
    report = json.loads((system_corpus / "catalogs.json").read_text(encoding="utf-8"))
    used = {s: set(report["splits"][s]["catalogs"]) for s in gc.SPLITS}
    assert not used["train"] & used["valid"]
    assert not used["train"] & used["test"]
    assert not used["valid"] & used["test"]
    first20 = sorted(p.stem for p in (SYSTEM_LOCALE / "de" / "LC_MESSAGES").glob("*.mo"))[:20]
    assert used["train"] | used["valid"] | used["test"] | set(report["skipped"]) == set(first20)

    # Every test pair really comes out of one of the test catalogs.
    cfg = gc.CorpusConfig(tgt_lang="de", output=system_corpus)
    test_catalog_pairs = set()
    for name in used["test"]:
        path = SYSTEM_LOCALE / "de" / "LC_MESSAGES" / f"{name}.mo"
        test_catalog_pairs.update(gc.load_catalog(path, cfg).pairs)
    assert set(load_split(system_corpus, "test")) <= test_catalog_pairs


@needs_system_de
def test_system_dedupe_and_no_held_out_english_in_train(system_corpus):
    train = load_split(system_corpus, "train")
    valid = load_split(system_corpus, "valid")
    test = load_split(system_corpus, "test")
    assert len(set(train)) == len(train)
    for held_out in (valid, test):
        keys = [en.casefold() for en, _ in held_out]
        assert len(set(keys)) == len(keys)
    train_en = {en.casefold() for en, _ in train}
    assert not train_en & {en.casefold() for en, _ in test}
    assert not train_en & {en.casefold() for en, _ in valid}
    assert not {en.casefold() for en, _ in valid} & {en.casefold() for en, _ in test}


@needs_system_de
def test_system_run_is_deterministic(system_corpus, tmp_path):
    again = tmp_path / "again"
    assert cli_main(SYSTEM_ARGS + ["--output", str(again)]) == 0
    for name in ("train.en", "train.de", "valid.de", "test.en", "mono.en"):
        assert (again / name).read_bytes() == (system_corpus / name).read_bytes(), name


@needs_system_de
def test_missing_language_is_a_one_line_error(tmp_path, capsys):
    rc = cli_main(["--tgt-lang", "zz", "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1
    assert "no catalogs found for language 'zz'" in err
    assert "--tgt-lang" in err and "--locale-dir" in err
    assert not (tmp_path / "out").exists()


def test_bad_locale_dir_and_flags_are_one_line_errors(tmp_path, capsys):
    assert (
        cli_main(
            [
                "--tgt-lang",
                "de",
                "--output",
                str(tmp_path / "o"),
                "--locale-dir",
                str(tmp_path / "nope"),
            ]
        )
        == 2
    )
    assert "--locale-dir" in capsys.readouterr().err
    assert cli_main(["--tgt-lang", "en", "--output", str(tmp_path / "o")]) == 2
    assert "--tgt-lang" in capsys.readouterr().err
    assert (
        cli_main(
            [
                "--tgt-lang",
                "de",
                "--output",
                str(tmp_path / "o"),
                "--max-words",
                "1",
                "--min-words",
                "2",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--max-words" in err


# ---------------------------------------------------------------- hand-made catalogs


def test_read_catalog_context_plural_header(tmp_path):
    path = tmp_path / "x.mo"
    write_mo(
        path,
        {
            "menu\x04Open the file": "Die Datei öffnen",
            "%d file was copied\x00%d files were copied": (
                "%d Datei wurde kopiert\x00%d Dateien wurden kopiert"
            ),
        },
    )
    entries = sorted(gc.read_catalog(path))
    assert entries == [
        ("%d file was copied", "%d Datei wurde kopiert"),
        ("Open the file", "Die Datei öffnen"),
    ]


@pytest.mark.parametrize(
    "msgid, msgstr, pair, reason",
    [
        ("Save _As", "Speichern _unter", ("Save As", "Speichern unter"), None),
        ("Color _name:", "Farb_name:", ("Color name:", "Farbname:"), None),
        (
            "Be_fore the\n  end",
            "Be_vor das Ende",
            ("Before the end", "Bevor das Ende"),
            None,
        ),
        (
            "&Print the page",
            "Seite &drucken",
            ("Print the page", "Seite drucken"),
            None,
        ),
        (
            "Bad value for ai_flags",
            "Ungültiger Wert für ai_flags",
            ("Bad value for ai_flags", "Ungültiger Wert für ai_flags"),
            None,
        ),
        ("Open the file", "", ("Open the file", ""), "untranslated"),
        (
            "Open the file",
            "open the FILE",
            ("Open the file", "open the FILE"),
            "untranslated",
        ),
        (
            "%s: %s (%d) %s",
            "%s: %s (%d) %s",
            ("%s: %s (%d) %s", "%s: %s (%d) %s"),
            "noise",
        ),
        (
            "See <b>this</b> page",
            "Siehe <b>diese</b> Seite",
            ("See <b>this</b> page", "Siehe <b>diese</b> Seite"),
            "noise",
        ),
        (
            "git branch [<options>] (-c | -C) [<old>] <new>",
            "git branch [<Optionen>] (-c | -C)",
            (
                "git branch [<options>] (-c | -C) [<old>] <new>",
                "git branch [<Optionen>] (-c | -C)",
            ),
            "noise",
        ),
        ("Cancel", "Abbrechen", ("Cancel", "Abbrechen"), "too_short"),
        (
            "Stop now",
            "Halte jetzt bitte sofort und ohne jede weitere Verzögerung an",
            (
                "Stop now",
                "Halte jetzt bitte sofort und ohne jede weitere Verzögerung an",
            ),
            "bad_ratio",
        ),
    ],
)
def test_clean_pair(msgid, msgstr, pair, reason):
    cfg = gc.CorpusConfig(tgt_lang="de", output=Path("unused"))
    assert gc.clean_pair(msgid, msgstr, cfg) == (pair, reason)


def test_clean_pair_length_flags():
    cfg = gc.CorpusConfig(tgt_lang="de", output=Path("unused"), max_words=4, min_words=3)
    assert gc.clean_pair("one two", "eins zwei", cfg)[1] == "too_short"
    assert gc.clean_pair("one two three four five", "eins zwei drei", cfg)[1] == "too_long"
    assert gc.clean_pair("one two three", "eins zwei drei vier fünf", cfg)[1] == "too_long"
    assert gc.clean_pair("one two three", "eins zwei drei", cfg)[1] is None


SHARED = (
    "Save the document before closing",
    "Das Dokument vor dem Schließen speichern",
)
SHARED_EN = (
    "Print the current page",
    "Die aktuelle Seite drucken",
)  # per catalog differs


def make_locale(root: Path, names=("alpha", "beta", "gamma", "delta", "eps", "zeta")) -> None:
    for name in names:
        entries = {
            f"Message number {i} of the {name} program": (
                f"Meldung Nummer {i} des Programms {name}"
            )
            for i in range(6)
        }
        entries[SHARED[0]] = SHARED[1]
        entries["ctx\x04" + SHARED[0]] = SHARED[1]  # same pair again under a context
        entries[SHARED_EN[0]] = f"{SHARED_EN[1]} ({name})"
        entries["_Quit the program"] = "Programm _beenden"
        entries["Identical text here"] = "Identical text here"
        write_mo(root / "de" / "LC_MESSAGES" / f"{name}.mo", entries)


def run_on_hand_made(locale, out):
    """The CLI on ``make_locale``'s catalogs: 9 test pairs, 6 valid."""
    args = ["--tgt-lang", "de", "--locale-dir", str(locale), "--output", str(out)]
    return cli_main(args + ["--test-size", "9", "--valid-size", "6"])


def test_splits_and_dedupe_on_hand_made_catalogs(tmp_path, capsys):
    make_locale(tmp_path / "locale")
    out = tmp_path / "out"
    # 9 pairs per catalog: one catalog fills test (9), the next valid (6 new English).
    rc = run_on_hand_made(tmp_path / "locale", out)
    assert rc == 0
    summary = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in summary] == [
        "train",
        "valid",
        "test",
        "mono",
    ]

    report = json.loads((out / "catalogs.json").read_text(encoding="utf-8"))
    cats = {s: set(report["splits"][s]["catalogs"]) for s in gc.SPLITS}
    assert len(cats["test"]) == 1 and len(cats["valid"]) == 1 and len(cats["train"]) == 4
    assert report["dropped"]["untranslated"] == 6  # "Identical text here", per catalog

    splits = {s: load_split(out, s) for s in gc.SPLITS}
    assert len(splits["test"]) == 9 and len(splits["valid"]) == 6
    every = [p for s in gc.SPLITS for p in splits[s]]
    # The pair in every catalog (twice, once with msgctxt) survives once: in test.
    assert every.count(SHARED) == 1 and SHARED in splits["test"]
    # Same English, different translations: one pair in test, none in valid or train.
    assert sum(en == SHARED_EN[0] for en, _ in every) == 1
    assert ("Quit the program", "Programm beenden") in splits["test"]
    assert len(splits["train"]) == 4 * 6
    assert report["removed_from_train_overlapping_held_out"] == 4 * 3
    mono_en = read_lines(out / "mono.en")
    assert mono_en[:24] == [en for en, _ in splits["train"]]
    assert mono_en[24:] == ["Identical text here"]  # from training catalogs only


def test_unreadable_catalog_is_skipped(tmp_path, capsys):
    make_locale(tmp_path / "locale", names=("alpha", "beta", "gamma", "delta"))
    bad = tmp_path / "locale" / "de" / "LC_MESSAGES" / "broken.mo"
    bad.write_bytes(b"this is not a catalog")
    out = tmp_path / "out"
    rc = run_on_hand_made(tmp_path / "locale", out)
    assert rc == 0
    assert "skipped catalog broken" in capsys.readouterr().err
    assert "broken" in json.loads((out / "catalogs.json").read_text())["skipped"]


def test_everything_held_out_is_an_error(tmp_path, capsys):
    make_locale(tmp_path / "locale", names=("alpha", "beta"))
    rc = run_on_hand_made(tmp_path / "locale", tmp_path / "out")
    assert rc == 2
    assert "--valid-size" in capsys.readouterr().err
