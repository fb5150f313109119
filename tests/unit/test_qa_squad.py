"""SQuAD v1.1 JSON (XQuAD as published) -> typed QA examples; bad files in one line."""

import json
import os

import pytest

from veco_plugin.corpora.squad import Answer, QaExample, gold_answers, read_squad
from veco_plugin.errors import VecoUserError

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "xquad")
LANGS = ("en", "de", "zh", "ar")


def fixture(lang: str) -> str:
    return os.path.join(FIXTURES, f"xquad.{lang}.json")


@pytest.mark.parametrize("lang", LANGS)
def test_reads_the_published_files(lang):
    examples = read_squad(fixture(lang))
    assert len(examples) == 40  # 2 articles x 2 paragraphs: 14 + 16 + 5 + 5 questions
    assert [e.title for e in examples].count("Super_Bowl_50") == 30
    assert len({e.context for e in examples}) == 4
    for e in examples:
        assert len(e.answers) == 1
        assert e.context[e.answers[0].start : e.answers[0].end] == e.answers[0].text
    assert examples[0].id == "56beb4343aeaaa14008c925b" and examples[0].answers[0].text == "308"


def test_english_first_example_and_parallel_ids():
    first = read_squad(fixture("en"))[0]
    assert first == QaExample(
        id="56beb4343aeaaa14008c925b",
        title="Super_Bowl_50",
        question="How many points did the Panthers defense surrender?",
        context=first.context,
        answers=(Answer("308", 34),),
    )
    assert first.context.startswith("The Panthers defense gave up just 308 points")
    ids = [e.id for e in read_squad(fixture("en"))]
    for lang in LANGS[1:]:
        assert [e.id for e in read_squad(fixture(lang))] == ids  # XQuAD is parallel
    assert gold_answers(read_squad(fixture("de")))["56beb4343aeaaa14008c925b"] == ["308"]


def _rewrite(tmp_path, change) -> str:
    with open(fixture("en"), encoding="utf-8") as f:
        data = json.load(f)
    change(data)
    path = tmp_path / "xquad.en.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def _one_line(path_or_text, match):
    with pytest.raises(VecoUserError, match=match) as caught:
        read_squad(path_or_text)
    assert "\n" not in str(caught.value)
    return str(caught.value)


def test_a_bad_offset_is_one_line_naming_file_and_question(tmp_path):
    def shift(data):
        data["data"][0]["paragraphs"][0]["qas"][1]["answers"][0]["answer_start"] += 1

    path = _rewrite(tmp_path, shift)
    message = _one_line(path, "answer_start 471 of question 56beb4343aeaaa14008c925c in ")
    assert message.startswith(f"answer_start 471 of question 56beb4343aeaaa14008c925c in {path}")
    assert "is not its text: '136' expected, the context has '36,' there" in message


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda d: d["data"][0]["paragraphs"][0].pop("context"), "has no 'context' key"),
        (lambda d: d["data"][1].pop("title"), "article 2 has no 'title' key"),
        (lambda d: d.pop("data"), "the file has no 'data' key"),
        (lambda d: d.update(data=[]), r"no questions \('data' holds none\)"),
        (
            lambda d: d["data"][0]["paragraphs"][0]["qas"][0]["answers"][0].update(
                answer_start="34"
            ),
            "'answer_start' of an answer of question 56beb4343aeaaa14008c925b is a str, not",
        ),
        (
            lambda d: d["data"][0]["paragraphs"][0]["qas"][0].update(answers=[]),
            "question 56beb4343aeaaa14008c925b has no answers",
        ),
        (
            lambda d: d["data"][0]["paragraphs"][0]["qas"][1].update(id="56beb4343aeaaa14008c925b"),
            "question id 56beb4343aeaaa14008c925b appears twice",
        ),
    ],
)
def test_malformed_files_are_one_line_naming_the_file(tmp_path, change, match):
    path = _rewrite(tmp_path, change)
    assert path in _one_line(path, match)


def test_files_that_are_not_json(tmp_path):
    text = tmp_path / "text.json"
    text.write_text("<html>not json</html>\n")
    assert str(text) in _one_line(str(text), r"not JSON \(line 1, column 1")
    latin = tmp_path / "latin.json"
    latin.write_bytes('{"data": "caf\xe9"}'.encode("latin-1"))
    _one_line(str(latin), "not UTF-8")
    _one_line(str(tmp_path / "missing.json"), "missing.json: no such file")
    _one_line(str(tmp_path), "is a directory")
