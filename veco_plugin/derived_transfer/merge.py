"""One table from rows measured in separate runs (``veco-derived-transfer --merge RUN ...``):
each finished run's OUT/results.json gives its models, written again as one
OUT/results.{md,json,png} with Spearman's ρ over all of them.

Rows compare only when they differ by transformation and objective alone, so the runs must
share the pre-training text, the dictionary draw, the sentencepiece pieces, the POS files,
the settings and the notes (the fine-tuning recipe among them); a model measured twice is
refused. The merged JSON names its runs (``merged_from``).
"""

import dataclasses
import filecmp
import json
import os
from typing import Any, Dict, List, Sequence

from ..corpora.derived import TRANS, TRANS_INV, TRANS_SYN
from ..errors import VecoUserError
from . import report

# what the runs must share, byte for byte (spm.model records its input's path: its pieces)
SHARED_FILES = (
    "corpus/text.txt",
    "corpus/pos-train.tsv",
    "corpus/pos-dev.tsv",
    "derived/bilingual.txt",
    "spm.vocab",
)
SHARED_KEYS = ("settings", "notes")
ORDER = (TRANS, TRANS_INV, TRANS_SYN)  # the paper's rows


def _results(run: str) -> Dict[str, Any]:
    path = os.path.join(run, "results.json")
    if not os.path.isdir(run):
        raise VecoUserError(f"--merge {run}: no such directory: give the --out of a finished run")
    if not os.path.isfile(path):
        raise VecoUserError(
            f"--merge {run}: no results.json: give the --out of a finished "
            "veco-derived-transfer run"
        )
    with open(path, encoding="utf-8") as f:
        try:
            payload = json.load(f)
        except json.JSONDecodeError as e:
            raise VecoUserError(f"--merge {run}: {path} is not JSON ({e}): run it again") from e
    models = payload.get("models") if isinstance(payload, dict) else None
    if not isinstance(models, list) or not all(
        isinstance(m, dict) and {"transform", "objective"} <= m.keys() for m in models
    ):
        raise VecoUserError(
            f"--merge {run}: {path} has no models: give the --out of a veco-derived-transfer run"
        )
    return payload


def _check_shared(first: str, run: str, a: Dict[str, Any], b: Dict[str, Any]) -> None:
    for name in SHARED_FILES:
        x, y = os.path.join(first, name), os.path.join(run, name)
        if os.path.isfile(x) != os.path.isfile(y) or (
            os.path.isfile(x) and not filecmp.cmp(x, y, shallow=False)
        ):
            raise VecoUserError(
                f"--merge {first} {run}: their {name} differ: rows compare only when measured "
                "on one text, dictionary draw and vocabulary (the same --text, --pos, --seed "
                "and --dictionary-coverage)"
            )
    for key in SHARED_KEYS:
        if a.get(key) != b.get(key):
            raise VecoUserError(
                f"--merge {first} {run}: their {key} differ in results.json: rows compare "
                "only when measured with the same settings"
            )


def merge(out: str, runs: Sequence[str]) -> str:
    """OUT/results.{md,json,png} of every model of ``runs``; returns the markdown."""
    if len(runs) < 2:
        raise VecoUserError("--merge: give two or more finished runs (repeat --merge RUN)")
    if os.path.exists(out) and not os.path.isdir(out):
        raise VecoUserError(f"--out {out} is a file: give a directory for the merged table")
    paths = [os.path.abspath(run) for run in runs]
    if os.path.abspath(out) in paths:
        raise VecoUserError(f"--out {out} is one of the merged runs: give a directory of its own")
    for k, path in enumerate(paths):
        if path in paths[:k]:
            raise VecoUserError(f"--merge {runs[k]} is given twice: give each run once")
    payloads = [_results(run) for run in runs]
    fields = {f.name for f in dataclasses.fields(report.Cell)}
    cells: List[report.Cell] = []
    seen: Dict[tuple, str] = {}
    for run, payload in zip(runs, payloads):
        _check_shared(runs[0], run, payloads[0], payload)
        for model in payload["models"]:
            key = (model["transform"], model["objective"])
            if key in seen:
                raise VecoUserError(
                    f"--merge: {key[1]} on {key[0]} is in both {seen[key]} and {run}: "
                    "give each model once"
                )
            seen[key] = run
            cells.append(report.Cell(**{k: v for k, v in model.items() if k in fields}))
    rank = {t: k for k, t in enumerate(ORDER)}
    cells.sort(key=lambda c: rank.get(c.transform, len(ORDER)))  # stable: objectives in order
    os.makedirs(out, exist_ok=True)
    about = {key: payloads[0][key] for key in ("settings",) if key in payloads[0]}
    about["merged_from"] = paths
    return report.write(out, cells, about, payloads[0].get("notes", ()))
