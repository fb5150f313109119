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
"""

import logging
from typing import Dict, List, Sequence, Tuple

from ..errors import VecoUserError

logger = logging.getLogger(__name__)

# fairseq's Dictionary specials, which transformers' XLM-R tokenizer fixes at these ids
SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")
MASK = "<mask>"

# an UNUSED piece's score, this far below the lowest real score (never preferred)
UNUSED_MARGIN = 10.0


def _proto_module():
    from sentencepiece import sentencepiece_model_pb2

    return sentencepiece_model_pb2


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
    old = pb.ModelProto()
    try:
        old.ParseFromString(model_proto)
    except Exception as exc:  # protobuf's DecodeError
        raise VecoUserError(f"not a sentencepiece model ({exc})") from None
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
    lowest = min((p.score for p in by_text.values()), default=0.0) - UNUSED_MARGIN
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
            new.pieces.add(piece=word, score=lowest, type=Piece.UNUSED)
            unused += 1
    spec = new.trainer_spec
    spec.unk_id, spec.bos_id, spec.eos_id, spec.pad_id = 0, 1, 2, -1
    spec.unk_piece, spec.bos_piece, spec.eos_piece = unknown[0].piece, "<s>", "</s>"
    spec.vocab_size = len(new.pieces)
    if unused:
        logger.info("%d dictionary symbols are no sentencepiece piece: UNUSED pieces", unused)
    return new.SerializeToString(), {"pieces": len(new.pieces), "unused": unused}
