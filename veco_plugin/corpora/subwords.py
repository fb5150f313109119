"""Subword models on text files: sentencepiece training and encoding, fastBPE encoding,
the fairseq dictionary of a sentencepiece model and the ``--max-positions`` check.

Encoding reads lines as :mod:`.text` does (split on ``\\n`` only, strict UTF-8, every
whitespace run one space) and writes one line of space-joined pieces per input line.
"""

from __future__ import annotations

import importlib
import os
import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..errors import VecoUserError
from .text import chunks, read_lines, strict, write_lines

# Lines -> pieces of each line; the second argument is the language (Moses rules).
Encoder = Callable[[List[str], str], List[List[str]]]

# The joint model of scripts/prepare-pretraining-data.sh: unigram, no <s>/</s>/<pad>
# (fairseq adds its own), <unk> = 0.
TRAINER_OPTIONS: Dict[str, Any] = dict(
    character_coverage=1.0,
    model_type="unigram",
    bos_id=-1,
    eos_id=-1,
    pad_id=-1,
    unk_id=0,
    input_sentence_size=2000000,
    shuffle_input_sentence=True,
    minloglevel=2,
    num_threads=2,
)

_CHUNK = 100000  # lines encoded per call


def train_sentencepiece(
    inputs: Sequence[str], model_prefix: str, vocab_size: int, **options: Any
) -> str:
    """Train a sentencepiece model on the distinct ``inputs`` (sorted) with
    :data:`TRAINER_OPTIONS` (``options`` override them); returns ``MODEL_PREFIX.model``.

    A ``vocab_size`` the text cannot support is a :class:`VecoUserError` naming the
    bound sentencepiece reports.
    """
    import sentencepiece as spm

    files = sorted(set(inputs))
    settings = {**TRAINER_OPTIONS, **options}
    try:
        spm.SentencePieceTrainer.train(
            input=",".join(files), model_prefix=model_prefix, vocab_size=vocab_size, **settings
        )
    except RuntimeError as exc:  # sentencepiece states the bound: "... <= M." / "N vs M."
        most = re.search(r"Vocabulary size too high.*<= *(\d+)", str(exc))
        least = re.search(r"smaller than required_chars\. *\d+ vs (\d+)", str(exc))
        if most:
            raise VecoUserError(
                f"--vocab-size {vocab_size}: the text supports at most {most.group(1)} "
                f"pieces; pass --vocab-size {most.group(1)} or less, or more text"
            ) from exc
        if least:
            raise VecoUserError(
                f"--vocab-size {vocab_size}: the text has characters for {least.group(1)} "
                f"pieces, each needs one; pass --vocab-size {least.group(1)} or more"
            ) from exc
        raise
    return model_prefix + ".model"


def load_sentencepiece(model: str, flag: str = "--spm-model") -> Any:
    """A loaded ``SentencePieceProcessor``; a missing or unreadable file is a
    :class:`VecoUserError` naming ``flag``."""
    if not os.path.isfile(model):
        raise VecoUserError(f"sentencepiece model {model} not found ({flag})")
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor()
    try:
        sp.Load(model)
    except (OSError, RuntimeError) as exc:
        raise VecoUserError(f"cannot load sentencepiece model {model}: {exc}") from exc
    return sp


def spm_encoder(model: str, workers: int = 1) -> Encoder:
    """An :data:`Encoder` of sentencepiece ``model`` using ``workers`` threads."""
    sp = load_sentencepiece(model)

    def encode(lines: List[str], lang: str = "") -> List[List[str]]:
        return sp.encode(lines, out_type=str, num_threads=workers)

    return encode


def fastbpe_encoder(codes: str, vocab: Optional[str] = None) -> Encoder:
    """An :data:`Encoder` applying fastBPE ``codes`` to Moses-tokenized text."""
    if not os.path.isfile(codes):
        raise VecoUserError(f"BPE codes {codes} not found (--bpe-codes)")
    try:
        fastBPE = importlib.import_module("fastBPE")  # optional: scripts/install-fastbpe.sh
    except ImportError as exc:
        raise VecoUserError(
            "--bpe-codes needs the fastBPE Python module, which is not installed "
            "(pip install fastBPE; or use --spm-model)"
        ) from exc
    from sacremoses import MosesTokenizer

    bpe = fastBPE.fastBPE(codes, vocab or "")
    tokenizers: Dict[str, MosesTokenizer] = {}

    def encode(lines: List[str], lang: str) -> List[List[str]]:
        tok = tokenizers.setdefault(lang, MosesTokenizer(lang=lang))
        tokenized = [tok.tokenize(x, return_str=True, escape=False) for x in lines]
        return [x.split() for x in bpe.apply(tokenized)]

    return encode


def encode_lines(encode: Encoder, lines: List[str], lang: str = "") -> List[str]:
    """Each line as its space-joined pieces."""
    return [" ".join(pieces) for pieces in encode(lines, lang)]


def encode_files(model: str, pairs: Sequence[Tuple[str, str]], workers: int = 1) -> None:
    """Encode each ``src`` into ``dst`` with sentencepiece ``model``: one line of
    space-joined pieces per line of ``src`` (``dst`` written atomically)."""
    encode = spm_encoder(model, workers)
    for src, dst in pairs:
        lines = strict(read_lines(src))
        write_lines(
            dst, (out for chunk in chunks(lines, _CHUNK) for out in encode_lines(encode, chunk))
        )


def write_dictionary(model: str, path: str) -> None:
    """A fairseq ``dict.txt`` of sentencepiece ``model``: every piece but ``<unk>`` and
    the control symbols, count 1, in id order."""
    sp = load_sentencepiece(model)
    write_lines(
        path,
        (
            f"{sp.id_to_piece(i)} 1"
            for i in range(sp.get_piece_size())
            if not (sp.is_unknown(i) or sp.is_control(i))
        ),
    )


def check_max_positions(paths: Sequence[str], max_positions: int, extra: int = 2) -> None:
    """Every line of the encoded ``paths`` has at most ``max_positions - extra`` pieces
    (``extra`` = 2: ``<s>`` and ``</s>``, which translation_from_pretrained_veco adds to
    the source); fairseq-generate refuses longer sentences."""
    for path in paths:
        longest = max((len(line.split()) for line in strict(read_lines(path))), default=0)
        if longest + extra > max_positions:
            added = "<s>, </s>" if extra == 2 else f"{extra} special tokens"
            raise VecoUserError(
                f"{path}: a sentence of {longest} pieces (+ {added}) exceeds --max-positions "
                f"{max_positions}; raise --max-positions (or --vocab-size)"
            )
