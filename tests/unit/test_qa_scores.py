"""SQuAD v1.1 and MLQA EM/F1: hand-computed cases, the official scripts' figures on the
published XQuAD fixture with a prediction file, and XTREME's evaluate.py figures on its
mock MLQA and TyDiQA-GoldP files."""

import json
import os

import pytest

from veco_plugin.cli.qa_eval import rules, scoring
from veco_plugin.corpora.squad import gold_answers, read_squad
from veco_plugin.errors import VecoUserError
from veco_plugin.evaluation.qa_decode import write_predictions
from veco_plugin.evaluation.qa_scores import (
    exact_match,
    mixed_segmentation,
    mlqa_tokens,
    score,
    squad_tokens,
    token_f1,
)

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "xquad")


def test_squad_normalisation_and_f1_by_hand():
    assert squad_tokens("The  Quick, brown fox!") == ["quick", "brown", "fox"]
    assert squad_tokens("theater an-the") == ["theater", "anthe"]  # whole words only
    assert exact_match("Denver Broncos.", "the denver broncos")
    # [cat sat on mat] vs [cat on mat]: P = 3/4, R = 1, F1 = 2 * 3/4 / (7/4) = 6/7
    assert token_f1("the cat sat on the mat", "a cat on a mat") == pytest.approx(6 / 7)
    assert token_f1("x b b", "b b c") == pytest.approx(2 / 3)  # common tokens: a multiset
    assert token_f1("the", "a") == 0.0 and exact_match("the", "a")  # both normalise to nothing


def test_score_takes_the_best_gold_and_counts_the_unanswered():
    gold = {"a": ["Denver Broncos", "Broncos"], "b": ["308"], "c": ["x"]}
    found = score(gold, {"a": "the Broncos", "b": "308 points", "z": "not asked"})
    # a: EM 1, F1 1; b: EM 0, F1 = 2 * 1/2 * 1 / (3/2) = 2/3; c: no prediction, 0
    assert found.exact_match == pytest.approx(100 / 3)
    assert found.f1 == pytest.approx(100 * (1 + 2 / 3) / 3)
    assert (found.total, found.unanswered) == (3, 1)
    with pytest.raises(VecoUserError, match="no questions to score"):
        score({}, {})


def test_mlqa_languages():
    assert mlqa_tokens("Die Verteidigung der Panthers", "de") == ["verteidigung", "panthers"]
    assert squad_tokens("Die Verteidigung") == ["die", "verteidigung"]
    assert mlqa_tokens("«Los Panthers» y la defensa", "es") == ["panthers", "y", "defensa"]
    assert squad_tokens("«Los»") == ["«los»"]  # SQuAD removes ASCII punctuation only
    assert mlqa_tokens("cái bàn của tôi", "vi") == ["bàn", "tôi"]
    assert mlqa_tokens("भारत की राजधानी।", "hi") == ["भारत", "की", "राजधानी"]
    # ar: every ال goes, the article and (as the script's pattern does) inside words
    assert mlqa_tokens("الكتاب", "ar") == ["كتاب"]
    assert mlqa_tokens("مالك", "ar") == ["م", "ك"]
    assert mlqa_tokens("The Broncos, a team", "en") == squad_tokens("The Broncos, a team")
    with pytest.raises(VecoUserError, match="not 'fr'") as caught:
        score({"a": ["x"]}, {"a": "x"}, lang="fr")
    assert "\n" not in str(caught.value)


def test_zh_mixed_segmentation_keeps_partial_credit():
    """Chinese has no spaces: whitespace tokens make ``超级碗`` and ``超级碗50`` two
    different single tokens (F1 0); mixed segmentation scores the three shared
    characters: P = 3/3, R = 3/4, F1 = 6/7."""
    assert mixed_segmentation("超级碗50 Super Bowl，") == [
        "超",
        "级",
        "碗",
        "50",
        "Super",
        "Bowl",
        "，",
    ]
    assert mixed_segmentation("\u9fa6\u9fa6 x") == ["\u9fa6\u9fa6", "x"]  # past U+9FA5
    assert token_f1("超级碗", "超级碗50") == 0.0
    assert token_f1("超级碗", "超级碗50", lang="zh") == pytest.approx(6 / 7)
    assert exact_match("“超级碗”", "超级碗", lang="zh")


# The official scripts' figures on tests/fixtures/xquad/xquad.<lang>.json with
# predictions.<lang>.json, printed by running each script once by hand (not vendored):
#   python evaluate_squad.py xquad.<lang>.json predictions.<lang>.json
#     (google-research/xtreme 838c13b69daafb9328785d16caae2711e4012123,
#      third_party/evaluate_squad.py: SQuAD's evaluate-v1.1.py)
#   python mlqa_evaluation_v1.py xquad.<lang>.json predictions.<lang>.json <lang>
#     (facebookresearch/MLQA 24bf470b2e68f2bfb93b2fd31c370bb8ee18d9ed)
OFFICIAL_SQUAD = {
    "en": (35.0, 57.11904761904761),
    "de": (32.5, 56.41071428571429),
    "zh": (32.5, 42.72222222222222),
    "ar": (32.5, 55.35119047619048),
}
OFFICIAL_MLQA = {
    "en": (35.0, 57.11904761904761),
    "de": (35.0, 57.041666666666664),
    "zh": (32.5, 51.50351476009371),
    "ar": (32.5, 56.35119047619048),
}


def _read(lang):
    gold = gold_answers(read_squad(os.path.join(FIXTURES, f"xquad.{lang}.json")))
    with open(os.path.join(FIXTURES, f"predictions.{lang}.json"), encoding="utf-8") as f:
        return gold, json.load(f)


@pytest.mark.parametrize("lang", sorted(OFFICIAL_SQUAD))
def test_official_figures(lang):
    gold, predictions = _read(lang)
    squad = score(gold, predictions)
    assert (squad.exact_match, squad.f1) == pytest.approx(OFFICIAL_SQUAD[lang], rel=1e-12)
    assert (squad.total, squad.unanswered) == (40, 6)
    mlqa = score(gold, predictions, lang=lang)
    assert (mlqa.exact_match, mlqa.f1) == pytest.approx(OFFICIAL_MLQA[lang], rel=1e-12)


def test_written_predictions_read_back(tmp_path):
    gold, predictions = _read("zh")
    path = str(tmp_path / "predictions.json")
    write_predictions(predictions, path)
    with open(path, encoding="utf-8") as f:
        assert json.load(f) == predictions
    assert score(gold, predictions, "zh") == score(gold, json.load(open(path)), "zh")


# XTREME's own mock files (tests/fixtures/xtreme_mock/, byte-for-byte copies of
# google-research/xtreme 838c13b69daafb9328785d16caae2711e4012123 mock_test_data/) scored
# by XTREME's evaluate.py, run once by hand in a scratch directory (not vendored):
#   python evaluate.py --prediction_folder PRED --label_folder LABELS --output_file out.json
# with PRED/LABELS holding only mlqa/ and tydiqa/ of mock_test_data/predictions|labels;
# out.json's per-language (exact_match, f1):
XTREME_MOCK = {
    "mlqa": {
        "en": (0.0, 60.0),
        "es": (0.0, 26.66666666666667),
        "de": (0.0, 85.71428571428571),
        "ar": (100.0, 100.0),
        "hi": (100.0, 100.0),
        "vi": (100.0, 100.0),
        "zh": (100.0, 100.0),
    },
    "tydiqa": {
        **{lang: (100.0, 100.0) for lang in ("en", "ar", "bn", "fi", "ko", "ru", "sw", "te")},
        "id": (0.0, 74.99999999999999),
    },
}
MOCK = os.path.join(os.path.dirname(FIXTURES), "xtreme_mock")


def read_mock(task, lang):
    gold = gold_answers(read_squad(os.path.join(MOCK, "labels", task, f"test-{lang}.json")))
    with open(os.path.join(MOCK, "predictions", task, f"test-{lang}.json"), encoding="utf-8") as f:
        return gold, json.load(f)


@pytest.mark.parametrize(
    "task, lang", [(task, lang) for task, langs in XTREME_MOCK.items() for lang in langs]
)
def test_xtreme_mock_files_score_as_xtreme_evaluate(task, lang):
    """MLQA with MLQA's rules for the test language (en too); TyDiQA-GoldP with SQuAD's."""
    gold, predictions = read_mock(task, lang)
    found = score(gold, predictions, scoring(lang, "mlqa" if task == "mlqa" else "squad"))
    assert (found.exact_match, found.f1) == pytest.approx(XTREME_MOCK[task][lang], rel=1e-12)


def test_english_under_mlqa_rules_drops_unicode_punctuation():
    """veco-qa-eval scored MLQA's en with SQuAD v1.1's rules; XTREME's evaluate.py (and
    MLQA's script) use MLQA's for en too: curly quotes and dashes are punctuation there."""
    assert scoring("en", "mlqa") == "en" and rules("en", "mlqa") == "mlqa-en"
    assert scoring("zh", "squad") is None and rules("zh", "squad") == "squad-v1.1"
    gold = {"q": ["“Stay” – a song"]}
    assert score(gold, {"q": "Stay song"}, scoring("en", "mlqa")).exact_match == 100.0
    assert score(gold, {"q": "Stay song"}, None).exact_match == 0.0
