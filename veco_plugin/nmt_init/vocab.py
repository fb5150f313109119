"""The fine-tuning dictionary: the pre-training ``dict.txt`` (found next to the checkpoint
or in its pre-training data directory), or the reduced one of ``veco-reduce-vocab``'s
``vocab_map.tsv``, checked against the checkpoint's embedding rows."""

import os
from dataclasses import dataclass
from typing import Any, List, Mapping, Optional

from fairseq.data import Dictionary

from ..checkpoints.config import cfg_value
from ..corpora.text import count_lines, input_file
from ..data.dictionary import MASK, load_dictionary_with_mask
from .keymap import NmtInitError


@dataclass(frozen=True)
class TargetDictionary:
    """The dictionary (``<mask>`` last) the target model is built with."""

    dictionary: Dictionary
    keep_rows: Optional[List[int]]  # new row r <- checkpoint row keep_rows[r]; None: all
    path: str  # the dict.txt or vocab_map.tsv it was read from


def find_dictionary(explicit: Optional[str], pretrained: str, state: Mapping[str, Any]) -> str:
    """``--dict``, else ``dict.txt`` next to ``pretrained``, else in the data directory of
    the checkpoint's config (``state``: the loaded checkpoint)."""
    if explicit:
        return input_file(explicit, "--dict", NmtInitError)
    candidates = [os.path.join(os.path.dirname(os.path.abspath(pretrained)), "dict.txt")]
    cfg = state.get("cfg")
    task = cfg.get("task") if cfg is not None else None
    data = cfg_value(task, "data") or cfg_value(state.get("args"), "data")
    if data:
        candidates.append(os.path.join(str(data).split(os.pathsep)[0], "dict.txt"))
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise NmtInitError(
        "cannot find the pre-training dictionary (looked for "
        + ", ".join(candidates)
        + "): pass --dict <pretrained dict.txt>"
    )


def _reduced_dictionary(
    vocab_map: str, dict_path: Optional[str], pretrained: str, state: Mapping[str, Any]
) -> TargetDictionary:
    """The dictionary of ``vocab_map`` (specials first, ``<mask>`` last), cross-checked
    with the pre-training dictionary when one is found."""
    from ..checkpoints.vocab_map import ReduceVocabError, read_vocab_map

    count_lines(
        input_file(vocab_map, "--vocab-map", NmtInitError), fix="rebuild it with veco-reduce-vocab"
    )
    try:
        keep, symbols = read_vocab_map(vocab_map)
    except ReduceVocabError as exc:
        raise NmtInitError(f"--vocab-map: {exc}") from None
    reduced = Dictionary()
    if symbols[: reduced.nspecial] != reduced.symbols or keep[: reduced.nspecial] != list(
        range(reduced.nspecial)
    ):
        raise NmtInitError(f"--vocab-map {vocab_map}: must start with the special symbols")
    if symbols[-1] != MASK:
        raise NmtInitError(f"--vocab-map {vocab_map}: the last row must be {MASK}")
    for symbol in symbols[reduced.nspecial : -1]:
        reduced.add_symbol(symbol)
    reduced.add_symbol(MASK)
    if reduced.symbols != symbols:
        raise NmtInitError(f"--vocab-map {vocab_map}: repeated symbols")
    try:
        full: Optional[Dictionary] = load_dictionary_with_mask(
            find_dictionary(dict_path, pretrained, state)
        )
    except NmtInitError:
        if dict_path:
            raise
        full = None  # the map alone defines the rows; nothing to cross-check
    if full is not None:
        wrong = [s for s, r in zip(symbols, keep) if r >= len(full) or full.symbols[r] != s]
        if wrong:
            raise NmtInitError(
                f"--vocab-map {vocab_map} does not match the pre-training dictionary "
                f"(e.g. {wrong[0]!r}): re-run veco-reduce-vocab with this dict.txt"
            )
    return TargetDictionary(reduced, keep, vocab_map)


def target_dictionary(
    pretrained: str,
    state: Mapping[str, Any],
    rows: int,
    dict_path: Optional[str] = None,
    vocab_map: Optional[str] = None,
) -> TargetDictionary:
    """The fine-tuning dictionary (+``<mask>``) and the embedding rows to keep.

    Args:
        pretrained: the checkpoint's path (its directory is searched for ``dict.txt``)
        state: the loaded checkpoint (its config names the pre-training data directory)
        rows: the checkpoint's embedding rows ``V`` (``embed_tokens.weight``: (V, C))
        dict_path: ``--dict``; vocab_map: ``--vocab-map``
    """
    if vocab_map:
        return _reduced_dictionary(vocab_map, dict_path, pretrained, state)
    path = find_dictionary(dict_path, pretrained, state)
    dictionary = load_dictionary_with_mask(path)
    if len(dictionary) != rows:
        raise NmtInitError(
            f"{path} has {len(dictionary)} types with {MASK} but the checkpoint's embeddings "
            f"{rows} rows: pass the dict.txt the model was pre-trained with (--dict)"
        )
    return TargetDictionary(dictionary, None, path)
