"""veco_plugin.xtreme.summary: on XTREME's own mock predictions and labels
(tests/fixtures/xtreme_mock), our scorers and summary give what XTREME's evaluate.py gives.

EVALUATE_PY holds evaluate.py's figures, from one run by hand, outside this repository:
google-research/xtreme at commit 838c13b69daafb9328785d16caae2711e4012123, Python 3.11.7,
seqeval 1.2.2, numpy 2.4.6, scikit-learn 1.9.1::

    python evaluate.py --prediction_folder mock_test_data/predictions \\
        --label_folder mock_test_data/labels --output_file out.json --verbose

(the values of out.json: "all_task" and the groups, and each task's "avg_metric"; printed
rounded to 2 decimals by the script). evaluate_test.py's udpos F1, 70.2175, came from an older
seqeval; seqeval 1.2.2, which the plugin's scorer follows, gives 70.3981.
"""

import json
from typing import Any, Dict

import pytest

from tests.helpers.runner import REPO
from veco_plugin.errors import VecoUserError
from veco_plugin.xtreme import summary as S

MOCK = f"{REPO}/tests/fixtures/xtreme_mock"

EVALUATE_PY: Dict[str, Any] = {
    "all_task": 62.1932649076773,
    "classification": 41.04761904761905,
    "tagging": 63.95299730746348,
    "qa": 80.37568011593986,
    "retrieval": 54.30555555555556,
    "avg_metric": {
        "pawsx": 51.42857142857143,
        "xnli": 30.666666666666668,
        "panx": 57.50793650793652,
        "udpos": 70.39805810699043,
        "bucc2018": 55.0,
        "tatoeba": 53.611111111111114,
        "xquad": 78.61570247933884,
        "mlqa": 69.45578231292518,
        "tydiqa": 93.05555555555556,
    },
    # QA's two averages (avg_exact_match, avg_f1)
    "qa_averages": {
        "xquad": (77.27272727272727, 79.9586776859504),
        "mlqa": (57.142857142857146, 81.76870748299321),
        "tydiqa": (88.88888888888889, 97.22222222222223),
    },
}


@pytest.fixture(scope="module")
def mock_results():
    return S.score_folder(f"{MOCK}/predictions", f"{MOCK}/labels")


def test_our_scorers_and_summary_equal_evaluate_py_on_xtreme_mock_files(mock_results):
    summary = S.summarize(mock_results)
    assert {t: s.headline for t, s in summary.tasks.items()} == EVALUATE_PY["avg_metric"]
    for task, (em, f1) in EVALUATE_PY["qa_averages"].items():
        assert summary.tasks[task].averages == {"exact_match": em, "f1": f1}
    assert summary.categories == {c: EVALUATE_PY[c] for c in S.CATEGORIES}
    # evaluate.py adds the nine in a set's order, which varies with PYTHONHASHSEED
    assert summary.overall == pytest.approx(EVALUATE_PY["all_task"], rel=1e-15, abs=0)
    assert all(s.complete for s in summary.tasks.values())


def test_overall_is_the_mean_of_nine_tasks_not_of_the_categories(mock_results):
    summary = S.summarize(mock_results)
    by_category = sum(summary.categories.values()) / len(summary.categories)
    assert summary.overall is not None
    assert summary.overall == pytest.approx(sum(EVALUATE_PY["avg_metric"].values()) / 9)
    assert abs(summary.overall - by_category) > 1  # 62.19 vs 59.92 on the mock files


def test_a_missing_task_drops_its_category_and_the_overall(mock_results):
    partial = {t: v for t, v in mock_results.items() if t != "bucc2018"}
    summary = S.summarize(partial)
    assert summary.overall is None and "retrieval" not in summary.categories
    assert summary.categories["qa"] == EVALUATE_PY["qa"]


def test_a_missing_language_marks_the_task_and_keeps_it_out(mock_results):
    results = dict(mock_results)
    results["pawsx"] = {"accuracy": {"de": 50.0, "en": 40.0, "xx": 0.0}}  # xx: not XTREME's
    summary = S.summarize(results)
    pawsx = summary.tasks["pawsx"]
    assert pawsx.headline == 45.0 and pawsx.missing == ("es", "fr", "ja", "ko", "zh")
    assert summary.overall is None and "classification" not in summary.categories
    table = S.markdown({"ours": summary})
    assert "| ours | 45.0* | 30.7 |" in table and "*: averaged over fewer" in table


def test_plugin_scorer_json_shapes_are_read():
    """veco-qa-eval writes {"em", "f1"} with an "avg" column: em is exact match; "avg" is
    recomputed over XTREME's languages."""
    qa = {"em": {"en": 60.0, "es": 40.0, "avg": 1.0}, "f1": {"en": 80.0, "es": 60.0, "avg": 1.0}}
    task = S.summarize_task("xquad", qa)
    assert task.averages == {"exact_match": 50.0, "f1": 70.0} and task.headline == 60.0


def test_rendering_one_row_per_checkpoint(mock_results):
    rows = {"a": S.summarize(mock_results), "b": S.summarize({"xnli": mock_results["xnli"]})}
    lines = S.markdown(rows).splitlines()
    assert lines[0].startswith("| model | pawsx | xnli | udpos | panx | xquad | mlqa | tydiqa |")
    assert lines[0].endswith("| classification | tagging | qa | retrieval | xtreme |")
    assert lines[2].endswith("| 41.0 | 64.0 | 80.4 | 54.3 | 62.2 |")
    assert lines[3] == "| b | - | 30.7 | " + " | ".join(["-"] * 12) + " |"
    data = json.loads(json.dumps(S.as_json(rows)))
    assert data["a"]["overall"] == pytest.approx(EVALUATE_PY["all_task"], rel=1e-15)
    assert data["b"]["overall"] is None
    assert data["b"]["tasks"]["xnli"]["missing"] == []


def test_bad_input_is_one_line(tmp_path):
    with pytest.raises(VecoUserError, match="not an XTREME task"):
        S.summarize_task("xcopa", {"accuracy": {"et": 1.0}})
    with pytest.raises(VecoUserError, match="QA's headline needs exact_match"):
        S.summarize_task("mlqa", {"f1": {"en": 1.0}})
    with pytest.raises(VecoUserError, match="no score in any of XTREME's languages"):
        S.summarize_task("xnli", {"accuracy": {"xx": 1.0}})
    (tmp_path / "p" / "xnli").mkdir(parents=True)
    (tmp_path / "l" / "xnli").mkdir(parents=True)
    with pytest.raises(VecoUserError, match=r"test-ar.tsv: no such file: XTREME scores xnli"):
        S.score_folder(str(tmp_path / "p"), str(tmp_path / "l"))
