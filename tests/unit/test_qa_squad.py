"""SQuAD v1.1 JSON (XQuAD as published, MLQA's and TyDiQA-GoldP's shapes in XTREME's mock
files, XTREME's rewritten files) -> typed QA examples; bad files in one line."""

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
        (lambda d: d["data"][1].update(title=2), "'title' of article 2 is a int, not a str"),
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


MOCK = os.path.join(os.path.dirname(FIXTURES), "xtreme_mock", "labels")


@pytest.mark.parametrize(
    "task, lang, ids",
    [
        ("mlqa", "zh", ["465f3fb044b5c50a78a2e2f9bc94c424d1f7d039"]),
        (
            "mlqa",
            "ar",
            [
                "ba7865d50777f2b90ba88fcb070a672d042b6b69",
                "eeb8dbd25efe5221dc6723ddee95daa07d2c8478",
            ],
        ),
        ("tydiqa", "ko", ["korean-3543942044825767374-0"]),
        ("tydiqa", "fi", ["finnish--267686407665346253-29"]),
    ],
)
def test_reads_mlqa_and_tydiqa_shapes(task, lang, ids):
    """MLQA: ``"version": 1.0`` (a number); TyDiQA-GoldP: ``"version":
    "TyDiQA-GoldP-1.1-for-SQuAD-1.1"``, several (even equal) gold answers a question."""
    examples = read_squad(os.path.join(MOCK, task, f"test-{lang}.json"))
    assert [e.id for e in examples] == ids
    assert all(e.title for e in examples)
    if task == "tydiqa":
        assert len(examples[0].answers) == 2


def test_xtreme_rewritten_train_file_without_titles_and_with_repeated_ids(tmp_path):
    """XTREME's utils_preprocess.py writes TyDiQA-GoldP's English train file as one article
    per question, no ``title``, ids cut to their last ``-`` part (so they repeat)."""
    with open(os.path.join(MOCK, "tydiqa", "test-en.json"), encoding="utf-8") as f:
        paragraph = json.load(f)["data"][0]["paragraphs"][0]
    paragraph["qas"][0]["id"] = "2"
    path = tmp_path / "tydiqa.goldp.en.train.json"
    data = {"data": [{"paragraphs": [paragraph]}] * 2, "version": "TyDiQA-GoldP-1.1-for-SQuAD-1.1"}
    path.write_text(json.dumps(data), encoding="utf-8")
    examples = read_squad(str(path), unique_ids=False)
    assert [(e.id, e.title) for e in examples] == [("2", ""), ("2", "")]
    assert examples[0].answers[0].text == "Wound care"
    _one_line(str(path), "question id 2 appears twice")  # scoring needs unique ids


def test_xtreme_stripped_test_file_is_refused_naming_labelled_copies(tmp_path):
    """XTREME's download rewrites its QA test files (remove_qa_test_annotations): no title,
    every answer ``{"answer_start": 0, "text": ""}``."""
    with open(os.path.join(MOCK, "mlqa", "test-de.json"), encoding="utf-8") as f:
        paragraph = json.load(f)["data"][0]["paragraphs"][0]
    for qa in paragraph["qas"]:
        qa["answers"] = [{"answer_start": 0, "text": ""}]
    path = tmp_path / "test-context-de-question-de.json"
    path.write_text(json.dumps({"data": [{"paragraphs": [paragraph]}], "version": 1.0}))
    message = _one_line(str(path), "as XTREME's download leaves its QA test files")
    assert "MLQA_V1.zip" in message and "tydiqa-goldp-dev-<language>.json" in message
