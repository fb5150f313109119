"""Read fairseq's ``--log-format json`` output (quickstart report, tests)."""

import json
from typing import Any, Dict, Iterable, List


def _number(value: Any) -> Any:
    try:
        return float(value)
    except (TypeError, ValueError):
        return value


def json_records(lines: Iterable[str], tag: str = "train_inner") -> List[Dict[str, Any]]:
    """The JSON records of one kind (``train_inner``, ``train``, ``valid``), values as floats
    where they parse. Epoch and valid summaries prefix keys with the tag
    (``valid_loss``): the prefix is dropped (``loss``)."""
    prefix = tag + "_"
    records = []
    for line in lines:
        start = line.find("{")
        if start < 0 or f"| {tag} |" not in line:
            continue
        try:
            record = json.loads(line[start:])
        except json.JSONDecodeError:
            continue
        records.append(
            {
                (k[len(prefix) :] if k.startswith(prefix) else k): _number(v)
                for k, v in record.items()
            }
        )
    return records
