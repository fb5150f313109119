"""SQuAD-format JSON -> ``veco_span_qa`` DATA (``veco-prepare-span-qa``).

Every split's file is read (:func:`.squad.read_squad`), each question cut into windows
(:func:`..data.qa_windows.make_windows`), checked, then written::

    DATA/input0/{split}.{bin,idx} dict.txt   <s> question </s></s> context part </s>
                                             (the checkpoint's dictionary)
    DATA/targets/{split}.{bin,idx}           per window (start, end): the positions of the
                                             answer's first and last piece, (0, 0) when the
                                             window does not hold it
    DATA/qa_windows.json                     the window settings, read back by veco-qa-eval
    DATA/spm.model                           --spm-model, for veco-qa-eval

The files appear once all are written (:func:`..outputs.staged_dir`).
"""

import dataclasses
import json
import os
import shutil
from typing import Any, Dict, List, Mapping, Sequence

from fairseq.data import Dictionary

from ..data.qa_windows import QaWindow, QaWindowSettings, make_windows
from ..errors import VecoUserError
from ..outputs import WHOLE, check_output_dir, staged_dir
from .squad import QaExample, read_squad
from .subwords import load_sentencepiece
from .xtreme import binarize_ids, check_dictionary, load_tokens

SETTINGS_FILE = "qa_windows.json"


def encode_windows(
    sp: Any, tokens: Dictionary, examples: Sequence[QaExample], settings: QaWindowSettings
) -> List[QaWindow]:
    """The windows of every example, in example order."""
    return [w for e in examples for w in make_windows(e, sp, tokens, settings)]


def read_settings(data: str) -> QaWindowSettings:
    """The window settings ``veco-prepare-span-qa`` wrote into DATA."""
    path = os.path.join(data, SETTINGS_FILE)
    if not os.path.isfile(path):
        raise VecoUserError(
            f"--data {data}: no {SETTINGS_FILE}: give the DATA directory veco-prepare-span-qa "
            "wrote"
        )
    with open(path, encoding="utf-8") as f:
        return QaWindowSettings(**json.load(f))


def _counts(per_example: Sequence[Sequence[QaWindow]]) -> Dict[str, int]:
    """Counted per example, not per id: ids may repeat in a train file."""
    windows = [w for ws in per_example for w in ws]
    return {
        "questions": len(per_example),
        "windows": len(windows),
        "windows_with_answer": sum(1 for w in windows if w.start_position),
        "questions_without_target": sum(
            1 for ws in per_example if not any(w.start_position for w in ws)
        ),
    }


def prepare_span_qa(
    output: str,
    splits: Mapping[str, str],
    spm_model: str,
    dictionary: str,
    settings: QaWindowSettings = QaWindowSettings(),
) -> Dict[str, Dict[str, int]]:
    """Binarize ``splits`` (name -> SQuAD JSON file) into ``output``. Returns per split:
    questions, windows, windows holding their answer, and questions no window answers
    (an answer longer than a window: trained as "no answer" in every window)."""
    check_output_dir(output, "--output", overwrite=False, refill=WHOLE)
    if "train" not in splits:
        raise VecoUserError("--split train=FILE.json is needed")
    # no split here is decoded by id (veco-qa-eval reads its test files itself): XTREME's
    # TyDiQA-GoldP train file, whose ids repeat, is read as it is
    read = {name: read_squad(path, unique_ids=False) for name, path in splits.items()}
    tokens, sp = load_tokens(dictionary), load_sentencepiece(spm_model)
    lines = [" ".join(sp.encode(e.context, out_type=str)) for e in read["train"]]
    check_dictionary(lines, tokens, spm_model, dictionary)
    per_example = {
        name: [make_windows(e, sp, tokens, settings) for e in ex] for name, ex in read.items()
    }
    encoded = {name: [w for ws in windows for w in ws] for name, windows in per_example.items()}
    with staged_dir(output) as stage:
        os.makedirs(os.path.join(stage, "input0"))
        shutil.copyfile(dictionary, os.path.join(stage, "input0", "dict.txt"))
        shutil.copyfile(spm_model, os.path.join(stage, "spm.model"))
        with open(os.path.join(stage, SETTINGS_FILE), "w", encoding="utf-8") as f:
            json.dump(dataclasses.asdict(settings), f)
        for name, windows in encoded.items():
            binarize_ids([w.tokens for w in windows], len(tokens), f"{stage}/input0/{name}")
            binarize_ids(
                [(w.start_position, w.end_position) for w in windows],
                settings.max_length,
                f"{stage}/targets/{name}",
            )
    return {name: _counts(windows) for name, windows in per_example.items()}
