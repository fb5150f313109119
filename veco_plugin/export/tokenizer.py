"""A sentencepiece model whose ids, read by transformers' XLM-R tokenizer, are fairseq's.

transformers' ``XLMRobertaTokenizer`` hard-codes XLM-R's layout: fairseq id = sentencepiece
id + 1, except ``<s>`` 0, ``<pad>`` 1, ``</s>`` 2, ``<unk>`` 3 (sentencepiece id 0), and
``<mask>`` = the piece count + 1. XLM-R's own ``sentencepiece.bpe.model`` fits it: ``<unk>``,
``<s>``, ``</s>`` are its pieces 0-2 and ``dict.txt`` lists the rest in order. Ours does not
(``veco_plugin.corpora.subwords``: no ``<s>``/``</s>`` pieces, so fairseq id = sentencepiece
id + 3), and any ``dict.txt`` may order its pieces otherwise.

:func:`aligned_model` therefore rewrites the model proto: ``<unk>``, ``<s>``, ``</s>``, then
the dictionary's symbols in dictionary order, each with its own score and type, so that
``fairseq id = piece id + 1`` for every symbol after the four specials.
Segmentation is unchanged: the same pieces with the same scores, only reordered. A
dictionary symbol that is no piece (fairseq's ``madeupword`` padding) becomes an ``UNUSED``
piece, which sentencepiece never produces. A piece missing from the dictionary cannot be
mapped (fairseq reads it as ``<unk>``) and is refused.

:func:`fast_tokenizer` builds the ``tokenizers`` library's tokenizer (``tokenizer.json``) of
the rewritten model directly, its unigram vocabulary listing the dictionary's symbols in
dictionary order, so that its ids are fairseq's whatever transformers version reads it.
transformers 5 has no sentencepiece XLM-R tokenizer: its ``XLMRobertaTokenizer(vocab_file=...)``
ignores the file and starts from a five-token vocabulary (saved, every piece reads as
``<unk>``); ``from_pretrained`` takes the vocabulary, scores and normalizer from
``tokenizer.json``, or converts ``sentencepiece.bpe.model`` when there is none. 4.x's slow
tokenizer reads ``sentencepiece.bpe.model``, its fast one ``tokenizer.json``.
"""

import logging
from typing import Any, Dict, List, Sequence, Tuple

from ..errors import VecoUserError

logger = logging.getLogger(__name__)

# fairseq's Dictionary specials, which transformers' XLM-R tokenizer fixes at these ids
SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")
MASK = "<mask>"

# an UNUSED piece's score is this far below any segmentation of it into real pieces
UNUSED_MARGIN = 10.0

# the sentencepiece word-boundary symbol, which the Metaspace pre-tokenizer writes for " "
SPACE = "\u2581"


def _proto_module():
    from sentencepiece import sentencepiece_model_pb2

    return sentencepiece_model_pb2


def _parse(model_proto: bytes) -> Any:
    """The ``ModelProto`` of a serialized sentencepiece model."""
    proto = _proto_module().ModelProto()
    proto.ParseFromString(model_proto)
    return proto


def parse_model(model_proto: bytes) -> Any:
    """The ``ModelProto`` of the bytes of a sentencepiece model file; bytes that are no
    such model (another file, a truncated copy) are a :class:`VecoUserError`."""
    try:
        proto = _parse(model_proto)
    except Exception as exc:  # protobuf's DecodeError
        raise VecoUserError(f"not a sentencepiece model ({exc})") from None
    if not proto.pieces:
        raise VecoUserError("not a sentencepiece model (no pieces)")
    return proto


def check_dictionary(symbols: Sequence[str]) -> List[str]:
    """The dictionary's ordinary symbols (after the specials, before ``<mask>``), checked
    against the layout transformers' XLM-R tokenizer assumes."""
    if tuple(symbols[: len(SPECIALS)]) != SPECIALS:
        raise VecoUserError(
            f"the dictionary starts {list(symbols[:4])}, not fairseq's {list(SPECIALS)}: "
            "transformers' XLM-R tokenizer fixes those ids"
        )
    if not symbols or symbols[-1] != MASK:
        raise VecoUserError(
            f"the dictionary's last symbol is {symbols[-1]!r}, not {MASK}: transformers' "
            "XLM-R tokenizer puts <mask> last"
        )
    return list(symbols[len(SPECIALS) : -1])


def unused_score(word: str, lowest: float) -> float:
    """The score of a dictionary symbol that is no piece (an UNUSED piece).

    sentencepiece never produces UNUSED pieces, but the ``tokenizers`` unigram model (which
    has no piece types) would choose one over its spelling in real pieces when it scores
    higher. Any such spelling has at most ``len(word) + 1`` pieces (a leading ``\u2581``),
    each scoring at least ``lowest`` (<= 0), so this score is below all of them. (A
    symbol with a character that is no piece can still beat that character's ``<unk>``.)
    """
    return -(abs(lowest) + UNUSED_MARGIN) * (len(word) + 1)


def aligned_model(model_proto: bytes, symbols: Sequence[str]) -> Tuple[bytes, Dict[str, int]]:
    """Rewrite a serialized sentencepiece model for a fairseq dictionary.

    Args:
        model_proto: the sentencepiece model file's bytes.
        symbols: the fairseq dictionary's symbols in id order (``Dictionary.symbols``).
    Returns:
        the new model's bytes (``fairseq id = piece id + 1``, see the module docstring)
        and counts: ``pieces`` written, ``unused`` symbols added as UNUSED pieces.
    """
    pb = _proto_module()
    old = parse_model(model_proto)
    Piece = pb.ModelProto.SentencePiece
    words = check_dictionary(symbols)
    unknown = [p for p in old.pieces if p.type == Piece.UNKNOWN]
    if len(unknown) != 1:
        raise VecoUserError(f"the sentencepiece model has {len(unknown)} <unk> pieces, not 1")
    by_text = {p.piece: p for p in old.pieces if p.type not in (Piece.UNKNOWN, Piece.CONTROL)}
    left_out = [p for p in by_text if p not in set(words)]
    if left_out:
        raise VecoUserError(
            f"{len(left_out)} sentencepiece pieces are not in the dictionary (e.g. "
            f"{left_out[0]!r}): fairseq reads them as <unk>, which a sentencepiece tokenizer "
            "cannot express; give the dict.txt made from this sentencepiece model"
        )
    lowest = min((p.score for p in by_text.values()), default=0.0)
    new = pb.ModelProto()
    new.CopyFrom(old)
    del new.pieces[:]
    new.pieces.add(piece=unknown[0].piece, score=unknown[0].score, type=Piece.UNKNOWN)
    new.pieces.add(piece="<s>", score=0.0, type=Piece.CONTROL)
    new.pieces.add(piece="</s>", score=0.0, type=Piece.CONTROL)
    unused = 0
    for word in words:
        if word in by_text:
            new.pieces.append(by_text[word])
        else:
            new.pieces.add(piece=word, score=unused_score(word, lowest), type=Piece.UNUSED)
            unused += 1
    spec = new.trainer_spec
    spec.unk_id, spec.bos_id, spec.eos_id, spec.pad_id = 0, 1, 2, -1
    spec.unk_piece, spec.bos_piece, spec.eos_piece = unknown[0].piece, "<s>", "</s>"
    spec.vocab_size = len(new.pieces)
    if unused:
        logger.info("%d dictionary symbols are no sentencepiece piece: UNUSED pieces", unused)
    return new.SerializeToString(), {"pieces": len(new.pieces), "unused": unused}


def unigram_vocab(model_proto: bytes, symbols: Sequence[str]) -> List[Tuple[str, float]]:
    """The ``tokenizers`` unigram vocabulary of an :func:`aligned_model` proto.

    Args:
        model_proto: :func:`aligned_model`'s bytes (``fairseq id = piece id + 1``).
        symbols: the fairseq dictionary's symbols in id order.
    Returns:
        ``(symbol, score)`` for every dictionary symbol, in dictionary order (list index =
        fairseq id): the four specials and ``<mask>`` score 0 (they are matched as added
        tokens, never by the unigram lattice), a piece keeps its sentencepiece score.
    """
    return _vocab(_parse(model_proto), symbols)


def _vocab(proto: Any, symbols: Sequence[str]) -> List[Tuple[str, float]]:
    """:func:`unigram_vocab` of a parsed ``ModelProto``."""
    words = check_dictionary(symbols)
    pieces = [(p.piece, p.score) for p in proto.pieces[len(SPECIALS) - 1 :]]
    if [piece for piece, _ in pieces] != words:
        raise VecoUserError("the sentencepiece model is not aligned to the dictionary")
    return [(s, 0.0) for s in SPECIALS] + pieces + [(MASK, 0.0)]


def fast_tokenizer(model_proto: bytes, symbols: Sequence[str]) -> Any:
    """The ``tokenizers.Tokenizer`` (``tokenizer.json``) of an :func:`aligned_model` proto.

    XLM-R's layout, as transformers' converter builds it from sentencepiece: a unigram model
    over :func:`unigram_vocab` (``<unk>`` = 3), sentencepiece's precompiled normalizer, a
    right strip and runs of spaces made one ``\u2581``, the Metaspace pre-tokenizer and
    decoder, the specials as added tokens (``<mask>`` swallows the space before it) and the
    post-processor ``<s> A </s>`` / ``<s> A </s> </s> B </s>``. Encoding a line gives the
    fairseq ids of its pieces between ``<s>`` (0) and ``</s>`` (2).
    """
    from tokenizers import (
        AddedToken,
        Regex,
        Tokenizer,
        decoders,
        normalizers,
        pre_tokenizers,
        processors,
    )
    from tokenizers.models import Unigram

    proto = _parse(model_proto)
    tokenizer = Tokenizer(
        Unigram(_vocab(proto, symbols), unk_id=SPECIALS.index("<unk>"), byte_fallback=False)
    )
    steps = [normalizers.Strip(left=False, right=True), normalizers.Replace(Regex(" {2,}"), SPACE)]
    charsmap = proto.normalizer_spec.precompiled_charsmap
    if charsmap:
        steps.insert(0, normalizers.Precompiled(charsmap))
    tokenizer.normalizer = normalizers.Sequence(steps)
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement=SPACE, prepend_scheme="always")
    tokenizer.decoder = decoders.Metaspace(replacement=SPACE, prepend_scheme="always")
    tokenizer.add_special_tokens(
        [AddedToken(s, normalized=False, special=True) for s in SPECIALS]
        + [AddedToken(MASK, lstrip=True, normalized=True, special=True)]
    )
    bos, eos = SPECIALS[0], SPECIALS[2]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, SPECIALS.index(bos)), (eos, SPECIALS.index(eos))],
    )
    return tokenizer
