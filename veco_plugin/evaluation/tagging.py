"""A ``veco_tagging`` checkpoint tags the words of published files (``veco-tag-eval``).

The words are read (:mod:`..corpora.tagging`), encoded and cut into windows exactly as
``veco-prepare-tagging`` cuts them (:func:`..corpora.tagging_data.encode_windows`, the
DATA's ``spm.model``), tagged at each word's first piece, and put back in sentence order:
every word is tagged exactly once.
"""

import os
from typing import Any, List, Sequence, Tuple

import torch
from fairseq import checkpoint_utils

from ..checkpoints.config import cfg_value
from ..checkpoints.encoder import read_checkpoint
from ..corpora.tagging import TaggedSentence
from ..corpora.tagging_data import encode_windows, window_ids
from ..errors import VecoUserError

TASK = "veco_tagging"
TAGGER_FIX = (
    f"give a checkpoint fine-tuned with fairseq-train --task {TASK} (its checkpoint_best.pt)"
)


def load_fine_tuned(
    path: str, data: str, named: str, task: str, what: str, fix: str, max_length: int
) -> Tuple[Any, Any, Any]:
    """``(model, cfg, task)`` of the checkpoint ``path`` trained with ``--task task``, on
    DATA, in eval mode (on the GPU when there is one), reading windows of ``max_length``
    positions; anything else is one line starting with ``named``, saying it is not ``what``
    and ending with ``fix``."""
    state = read_checkpoint(path, named, fix, {"data": data})
    task_name = cfg_value(cfg_value(state.get("cfg"), "task"), "_name")
    if task_name != task:
        raise VecoUserError(f"{named}: trained with --task {task_name}, not {what}: {fix}")
    models, cfg, loaded = checkpoint_utils.load_model_ensemble_and_task([path], state=state)
    positions = models[0].max_positions()
    if max_length > positions:
        raise VecoUserError(
            f"{named}: its model reads at most {positions} positions, the windows are "
            f"{max_length} long: cut them to {positions} (the prepare command's --max-length)"
        )
    model = models[0].eval()
    return (model.cuda() if torch.cuda.is_available() else model), cfg, loaded


def load_tagger(path: str, data: str, named: str, max_length: int) -> Tuple[Any, Any, Any]:
    """``(model, cfg, task)`` of the ``veco_tagging`` checkpoint ``path`` on DATA, in eval
    mode; anything else is one line starting with ``named``."""
    return load_fine_tuned(path, data, named, TASK, "a tagger", TAGGER_FIX, max_length)


def tag_sentences(
    model,
    task,
    head: str,
    sentences: Sequence[TaggedSentence],
    max_length: int,
    batch_size: int = 32,
) -> List[List[str]]:
    """The predicted tag of every word of ``sentences`` (their tags are not read)."""
    from ..corpora.subwords import load_sentencepiece

    sp = load_sentencepiece(os.path.join(task.cfg.data, "spm.model"), "--data")
    tokens, labels = task.source_dictionary, task.label_dictionary
    windows = encode_windows(sp, sentences, max_length)
    device = next(model.parameters()).device
    predicted: List[List[str]] = [[] for _ in sentences]
    for start in range(0, len(windows), batch_size):
        batch = windows[start : start + batch_size]
        ids = [window_ids(w, tokens, labels)[0] for w in batch]
        src = torch.full((len(ids), max(map(len, ids))), tokens.pad(), dtype=torch.long)
        for row, seq in enumerate(ids):
            src[row, : len(seq)] = torch.tensor(seq)
        with torch.no_grad():
            logits, _ = model(
                src.to(device), features_only=True, classification_head_name=head
            )  # (B, T, K)
        classes = logits.argmax(-1).cpu()
        for row, window in enumerate(batch):
            for at in window.starts:  # +1: <s>
                symbol = labels[labels.nspecial + int(classes[row, at + 1])]
                predicted[window.sentence].append(symbol)
    return predicted
