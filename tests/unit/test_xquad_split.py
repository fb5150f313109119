"""``veco-xquad-split`` on XQuAD's published files (tests/fixtures/xquad: the first two
articles of each language, taken three times as [0, 1, 0] so that train, dev and test each
get one): the layout veco-xtreme --data reads, the same question ids in every language's
test file, and one-line refusals."""

import json

import pytest

from veco_plugin.corpora.xquad_split import split_xquad
from veco_plugin.errors import VecoUserError

FIX = "tests/fixtures/xquad"
LANGS = ("ar", "de", "en", "zh")


def _xquad(folder, drop_question_in=None):
    folder.mkdir()
    for lang in LANGS:
        with open(f"{FIX}/xquad.{lang}.json", encoding="utf-8") as f:
            squad = json.load(f)
        squad["data"] = [squad["data"][0], squad["data"][1], squad["data"][0]]
        if lang == drop_question_in:
            squad["data"][1]["paragraphs"][0]["qas"].pop()
        (folder / f"xquad.{lang}.json").write_text(json.dumps(squad), encoding="utf-8")
    return folder


def _ids(path):
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    return [qa["id"] for a in data for p in a["paragraphs"] for qa in p["qas"]]


def test_train_dev_and_every_language_test(tmp_path):
    out = tmp_path / "split"
    counts = split_xquad(str(_xquad(tmp_path / "xquad")), str(out), 1, 1)
    names = ["train-en", "dev-en"] + [f"test-{lang}" for lang in LANGS]
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{n}.json" for n in names)
    assert all(counts[n]["articles"] == 1 for n in names)
    english = json.loads((tmp_path / "xquad" / "xquad.en.json").read_text())["data"]
    train = json.loads((out / "train-en.json").read_text())["data"]
    assert train == english[:1]
    for lang in LANGS:
        assert _ids(out / f"test-{lang}.json") == _ids(out / "test-en.json")
    assert _ids(out / "dev-en.json") != _ids(out / "train-en.json")


@pytest.mark.parametrize(
    "case, words",
    [
        ("ids", "xquad.de.json: its articles or question ids differ from xquad.en.json"),
        ("sizes", "XQuAD has 3 articles; leave at least one for each"),
        ("english", "no xquad.en.json"),
        ("taken", "--out .* is not empty: give a new"),
    ],
)
def test_refusals(tmp_path, case, words):
    folder = _xquad(tmp_path / "xquad", "de" if case == "ids" else None)
    if case == "english":
        (folder / "xquad.en.json").unlink()
    if case == "taken":
        (tmp_path / "out").mkdir()
        (tmp_path / "out" / "notes.txt").write_text("mine")
    dev, test = (2, 1) if case == "sizes" else (1, 1)
    with pytest.raises(VecoUserError, match=words):
        split_xquad(str(folder), str(tmp_path / "out"), dev, test)
    assert case != "taken" or sorted(p.name for p in (tmp_path / "out").iterdir()) == ["notes.txt"]
