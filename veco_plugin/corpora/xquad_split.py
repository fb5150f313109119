"""A SQuAD stand-in from XQuAD itself, for machines without SQuAD's train file: fine-tune on
English articles, test zero-shot on the others in every language (``veco-xquad-split``).

XQuAD (deepmind/xquad) is 48 SQuAD v1.1 dev articles, the same paragraphs and question ids
in 12 languages. Its articles in order: the first go to ``train-en.json``, the next
``dev_articles`` to ``dev-en.json`` (English), the last ``test_articles`` to
``test-<lang>.json`` for every language: no test paragraph, in any language, is seen in
fine-tuning or in choosing the checkpoint. The layout is ``veco-xtreme --data``'s.
"""

import glob
import json
import os
import re
from typing import Dict, List

from ..errors import VecoUserError
from ..outputs import check_output_dir, staged_dir, write_text

XQUAD_FILE = re.compile(r"xquad\.([a-z]{2})\.json$")
ENGLISH = "en"


def _ids(article: Dict) -> List[str]:
    return [qa["id"] for p in article["paragraphs"] for qa in p["qas"]]


def read_xquad(folder: str) -> Dict[str, Dict]:
    """``{lang: SQuAD JSON}`` of every ``xquad.<lang>.json`` in ``folder``; English needed,
    every language the same articles and question ids."""
    found = {}
    for path in sorted(glob.glob(os.path.join(glob.escape(folder), "xquad.*.json"))):
        match = XQUAD_FILE.search(os.path.basename(path))
        if match:
            with open(path, encoding="utf-8") as f:
                try:
                    found[match.group(1)] = json.load(f)
                except json.JSONDecodeError as exc:
                    raise VecoUserError(f"{path}: not JSON ({exc})") from None
    if ENGLISH not in found:
        raise VecoUserError(
            f"--xquad {folder}: no xquad.en.json: give the folder of deepmind/xquad's files"
        )
    english = [_ids(a) for a in found[ENGLISH]["data"]]
    for lang, squad in found.items():
        if [_ids(a) for a in squad["data"]] != english:
            raise VecoUserError(
                f"{folder}/xquad.{lang}.json: its articles or question ids differ from "
                "xquad.en.json: give XQuAD's files as published"
            )
    return found


def split_xquad(folder: str, out: str, dev_articles: int = 4, test_articles: int = 8) -> Dict:
    """Write ``out/{train-en,dev-en,test-<lang>}.json``; returns the counts."""
    check_output_dir(out, "--out", False, "give a new (or empty) directory")
    found = read_xquad(folder)
    articles = len(found[ENGLISH]["data"])
    train = articles - dev_articles - test_articles
    if dev_articles < 1 or test_articles < 1 or train < 1:
        raise VecoUserError(
            f"--dev-articles {dev_articles} --test-articles {test_articles}: XQuAD has "
            f"{articles} articles; leave at least one for each of train, dev and test"
        )
    version = found[ENGLISH].get("version", "1.1")
    parts = {
        "train-en": found[ENGLISH]["data"][:train],
        "dev-en": found[ENGLISH]["data"][train : train + dev_articles],
        **{f"test-{lang}": s["data"][train + dev_articles :] for lang, s in found.items()},
    }
    counts = {}
    with staged_dir(out) as stage:  # the files appear together, or not at all
        for name, data in parts.items():
            text = json.dumps({"version": version, "data": data}, ensure_ascii=False)
            write_text(os.path.join(stage, f"{name}.json"), text + "\n")
            counts[name] = {"articles": len(data), "questions": sum(len(_ids(a)) for a in data)}
    return counts
