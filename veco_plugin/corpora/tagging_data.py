"""Tagged files -> ``veco_tagging`` DATA (``veco-prepare-tagging``).

Every split's files are read (:mod:`.tagging`), each word encoded alone and cut into
windows (:mod:`..data.tag_windows`), checked, then written::

    DATA/input0/{split}.{bin,idx} dict.txt   <s> pieces </s> (the checkpoint's dictionary)
    DATA/label/{split}.{bin,idx} dict.txt    the tag at each word's first piece, <pad> at the
                                             rest (tags: those of the train split, sorted)
    DATA/spm.model                           --spm-model, for veco-tag-eval
    DATA/tag_windows.json                    the window length, read back by veco-tag-eval

A tag of another split that the train split lacks cannot be learnt: it is written as
<pad> (not scored in validation) and counted in one warning line; ``veco-tag-eval`` scores
such words wrong. The files appear once all are written (:func:`..outputs.staged_dir`).
"""

import json
import logging
import os
import shutil
from collections import Counter
from typing import Dict, List, Mapping, Sequence

from fairseq.data import Dictionary

from ..data.tag_windows import Window, windows, word_pieces
from ..errors import VecoUserError
from ..outputs import WHOLE, check_output_dir, staged_dir
from .derived import segment_words
from .subwords import load_sentencepiece
from .tagging import TaggedSentence, read_tagged
from .xtreme import binarize_ids, check_dictionary, label_dictionary, load_tokens

logger = logging.getLogger(__name__)

SETTINGS_FILE = "tag_windows.json"  # the window length, read back by veco-tag-eval


def encode_windows(sp, sentences: Sequence[TaggedSentence], max_length: int) -> List[Window]:
    """The windows (at most ``max_length`` positions with ``<s>`` and ``</s>``) of
    ``sentences``, each word encoded alone by sentencepiece processor ``sp`` (a derived
    language's word, ``veco-derive-language``'s, cut into its copy pieces instead:
    :func:`.derived.segment_words`)."""
    if max_length < 3:
        raise VecoUserError(f"--max-length {max_length}: a window needs <s>, a piece and </s>")
    return windows(
        sentences, word_pieces(lambda w: segment_words(sp, w), sentences), max_length - 2
    )


def window_ids(window: Window, tokens: Dictionary, labels: Dictionary) -> List[List[int]]:
    """``[piece ids, label ids]`` of ``<s> pieces </s>``; a tag ``labels`` lacks reads <pad>."""
    pieces = [tokens.bos()] + [tokens.index(p) for p in window.pieces] + [tokens.eos()]
    tags = [labels.pad()] + [
        labels.pad() if t is None or labels.index(t) == labels.unk() else labels.index(t)
        for t in window.tags
    ]
    return [pieces, tags + [labels.pad()]]


def read_max_length(data: str) -> int:
    """The window length ``veco-prepare-tagging`` wrote DATA with."""
    path = os.path.join(data, SETTINGS_FILE)
    if not os.path.isfile(path):
        raise VecoUserError(
            f"--data {data}: no {SETTINGS_FILE}: give the DATA directory veco-prepare-tagging "
            "wrote (write it again if an older version wrote it)"
        )
    with open(path, encoding="utf-8") as f:
        return int(json.load(f)["max_length"])


def prepare_tagging(
    output: str,
    splits: Mapping[str, Sequence[str]],
    spm_model: str,
    dictionary: str,
    max_length: int = 128,
) -> Dict[str, Dict[str, int]]:
    """Binarize ``splits`` (name -> files pooled in order) into ``output``; the tags come
    from the ``train`` split. Returns per split: sentences, words, windows, and words whose
    tag the train split lacks."""
    check_output_dir(output, "--output", overwrite=False, refill=WHOLE)
    if "train" not in splits:
        raise VecoUserError("--split train=FILE is needed (the tags come from it)")
    read = {name: read_tagged(files) for name, files in splits.items()}
    tags = sorted({t for s in read["train"] for t in s.tags})
    if len(tags) < 2:
        raise VecoUserError(
            f"{splits['train'][0]}: every word is tagged {tags[0]!r}: a tagger needs two tags "
            "or more in the train split"
        )
    tokens, labels = load_tokens(dictionary), label_dictionary(tags)
    sp = load_sentencepiece(spm_model)
    encoded = {name: encode_windows(sp, sentences, max_length) for name, sentences in read.items()}
    lines = [" ".join(w.pieces) for w in encoded["train"]]
    check_dictionary(lines, tokens, spm_model, dictionary)
    counts = {}
    for name, sentences in read.items():
        unknown = Counter(t for s in sentences for t in s.tags if labels.index(t) == labels.unk())
        if unknown:
            logger.warning(
                "%s: %d words tagged with tags the train split lacks (%s): not scored in "
                "validation, wrong in veco-tag-eval",
                name,
                sum(unknown.values()),
                ", ".join(f"{t} {n}" for t, n in unknown.most_common(5)),
            )
        counts[name] = {
            "sentences": len(sentences),
            "words": sum(len(s.words) for s in sentences),
            "windows": len(encoded[name]),
            "unknown_tag_words": sum(unknown.values()),
        }
    with staged_dir(output) as stage:
        for key, d in (("input0", None), ("label", labels)):
            os.makedirs(os.path.join(stage, key))
            if d is None:
                shutil.copyfile(dictionary, os.path.join(stage, key, "dict.txt"))
            else:
                d.save(os.path.join(stage, key, "dict.txt"))
        shutil.copyfile(spm_model, os.path.join(stage, "spm.model"))
        with open(os.path.join(stage, SETTINGS_FILE), "w", encoding="utf-8") as f:
            json.dump({"max_length": max_length}, f)
        for name, wins in encoded.items():
            ids = [window_ids(w, tokens, labels) for w in wins]
            binarize_ids([p for p, _ in ids], len(tokens), os.path.join(stage, "input0", name))
            binarize_ids([t for _, t in ids], len(labels), os.path.join(stage, "label", name))
    return counts
