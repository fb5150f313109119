"""BLEU of fairseq-generate output: detokenized sacreBLEU (with its signature) and the
WMT14 "tokenized BLEU" (Moses-tokenized, compound-split), for any language pair.

:func:`score` reads the ``H-<id>`` hypotheses of a fairseq-generate log in sentence
order (every source sentence must have exactly one), decodes the subwords
(sentencepiece, or fastBPE ``@@`` joints + Moses detokenization), writes the plain
hypotheses next to their subword form and scores them against the raw references.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from ..corpora.subwords import load_sentencepiece
from ..corpora.text import normalize, read_lines_strict, write_lines
from ..errors import VecoUserError

SUBWORDS = ("sentencepiece", "fastbpe")
_HYP = re.compile(r"^H-(\d+)\t([^\t]*)\t?(.*)$")


def read_hypotheses(path: str, expected: int) -> List[str]:
    """Subword hypotheses of a fairseq-generate log, ordered by sentence id.

    Exactly one ``H-<id>`` per id ``0 .. expected-1`` is required.
    """
    hyps: Dict[int, str] = {}
    if not os.path.isfile(path):
        raise VecoUserError(f"{path}: no such fairseq-generate output")
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = _HYP.match(line.rstrip("\n"))
            if m is None:
                continue
            idx = int(m.group(1))
            if idx in hyps:
                raise VecoUserError(f"{path}: two hypotheses for sentence {idx} (use --nbest 1)")
            hyps[idx] = m.group(3)
    missing_ids = sorted(set(range(expected)) - set(hyps))
    extra = sorted(set(hyps) - set(range(expected)))
    if missing_ids or extra:
        head = ", ".join(map(str, missing_ids[:5])) + (" ..." if len(missing_ids) > 5 else "")
        raise VecoUserError(
            f"fairseq-generate wrote {len(hyps)} hypotheses for {expected} source "
            f"sentences ({path}; missing ids: {head or 'none'}; unexpected: "
            f"{len(extra)}): every sentence must be translated (check "
            "--required-batch-size-multiple 1 and "
            "--skip-invalid-size-inputs-valid-test)"
        )
    return [hyps[i] for i in range(expected)]


def decode_subwords(
    pieces: Sequence[str], spm_model: Optional[str], subword: str, lang: str
) -> List[str]:
    """Plain text from subword hypotheses: sentencepiece decoding, or (fastBPE) joining
    ``@@ `` and Moses-detokenizing for ``lang``."""
    if subword == "sentencepiece":
        if not spm_model:
            raise VecoUserError(f"sentencepiece model {spm_model} not found (--spm-model)")
        sp = load_sentencepiece(spm_model)
        return [normalize(sp.decode(p.split())) for p in pieces]
    if subword == "fastbpe":
        from sacremoses import MosesDetokenizer

        detok = MosesDetokenizer(lang=lang)
        return [detok.detokenize(re.sub(r"@@( |$)", "", p).split()) for p in pieces]
    raise VecoUserError(f"unknown --subword {subword}")


def split_compounds(text: str) -> str:
    """WMT14 En-De convention: ``a-b`` -> ``a ##AT##-##AT## b`` (non-overlapping)."""
    return re.sub(r"(\S)-(\S)", r"\1 ##AT##-##AT## \2", text)


def moses_tokenized(lines: Sequence[str], lang: str) -> List[str]:
    """Moses-tokenized, compound-split ``lines`` (the tokenized-BLEU input)."""
    from sacremoses import MosesTokenizer

    tok = MosesTokenizer(lang=lang)
    return [split_compounds(tok.tokenize(x, return_str=True)) for x in lines]


def bleu_scores(hyps: Sequence[str], refs: Sequence[str], lang: str) -> Dict[str, Any]:
    """{"sacrebleu": ..., "tokenized_bleu": ...}: score, signature and sacreBLEU's text."""
    from sacrebleu.metrics import BLEU

    detok = BLEU()
    d = detok.corpus_score(list(hyps), [list(refs)])
    tok = BLEU(tokenize="none", force=True)
    t = tok.corpus_score(moses_tokenized(hyps, lang), [moses_tokenized(refs, lang)])
    scores = {
        "sacrebleu": {
            "score": d.score,
            "signature": str(detok.get_signature()),
            "text": d.format(signature=str(detok.get_signature())),
        },
        "tokenized_bleu": {
            "score": t.score,
            "signature": str(tok.get_signature()),
            "tokenizer": f"sacremoses -l {lang} + compound splitting (##AT##-##AT##)",
            "text": t.format(),
        },
    }
    for key, value in scores.items():
        if not math.isfinite(value["score"]):
            raise VecoUserError(f"{key} is not finite")
    return scores


@dataclass(frozen=True)
class ScoreConfig:
    """What ``veco-wmt14 score`` reads and writes (its flags are these fields:
    :func:`veco_plugin.cli.config_flags.add_config_flags`)."""

    generate_output: str
    raw_ref: str
    tgt: str
    hyp_out: str
    raw_src: Optional[str] = None
    spm_model: Optional[str] = None
    subword: str = field(default="sentencepiece", metadata={"choices": SUBWORDS})
    json: Optional[str] = None
    checkpoint: Optional[str] = None


def score(cfg: ScoreConfig) -> Dict[str, Any]:
    """Order, count-check and decode the hypotheses, write ``hyp_out`` (+ ``.subword``),
    score both BLEUs, print them and write ``cfg.json``; the result."""
    refs = read_lines_strict(cfg.raw_ref)
    expected = len(refs)
    if cfg.raw_src:
        n_src = len(read_lines_strict(cfg.raw_src))
        if n_src != expected:
            raise VecoUserError(f"{cfg.raw_src} has {n_src} lines but {cfg.raw_ref} has {expected}")
    pieces = read_hypotheses(cfg.generate_output, expected)
    hyps = decode_subwords(pieces, cfg.spm_model, cfg.subword, cfg.tgt)
    os.makedirs(os.path.dirname(os.path.abspath(cfg.hyp_out)), exist_ok=True)
    write_lines(cfg.hyp_out + ".subword", pieces)
    write_lines(cfg.hyp_out, hyps)

    result: Dict[str, Any] = {
        "sentences": expected,
        "hypotheses": cfg.hyp_out,
        "reference": cfg.raw_ref,
        **bleu_scores(hyps, refs, cfg.tgt),
    }
    if cfg.checkpoint:
        result["checkpoint"] = cfg.checkpoint
    print(f"sacreBLEU (detokenized, vs {cfg.raw_ref}): {result['sacrebleu']['text']}")
    print(
        f"tokenized BLEU (moses -l {cfg.tgt}, compound-split): "
        f"{result['tokenized_bleu']['text']}"
    )
    if cfg.json:
        with open(cfg.json + ".part", "w") as f:
            json.dump(result, f, indent=2)
        os.replace(cfg.json + ".part", cfg.json)
    return result
