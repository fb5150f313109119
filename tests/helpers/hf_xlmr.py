"""Hugging Face XLM-R directories as the released models lay them out (config.json, weights,
sentencepiece.bpe.model, tokenizer.json), built locally: random weights, tiny sizes, a
sentencepiece model with XLM-R's special ids trained on the fixture text. Needs
``transformers``."""

import shutil
from pathlib import Path
from typing import Any, Dict, Tuple

import torch
from fairseq.data import Dictionary

from tests.helpers.runner import REPO
from veco_plugin.export.import_hf import spm_symbols
from veco_plugin.export.tokenizer import fast_tokenizer

TEXT = f"{REPO}/tests/fixtures/text"
# XLM-R base's config.json at tiny sizes (hidden_act, eps, positions = max + 2, one type)
CONFIG: Dict[str, Any] = dict(
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=64,
    max_position_embeddings=66,
    type_vocab_size=1,
    layer_norm_eps=1e-5,
    hidden_act="gelu",
    bos_token_id=0,
    pad_token_id=1,
    eos_token_id=2,
)


def xlmr_spm(directory: Path, vocab_size: int = 300, **ids) -> Tuple[str, Dictionary]:
    """A sentencepiece model with XLM-R's special ids (<unk> 0, <s> 1, </s> 2; ``ids``
    overrides them) trained on the fixture text, and the fairseq dictionary it gives
    (``<mask>`` included)."""
    import sentencepiece as spm

    ids = {"unk_id": 0, "bos_id": 1, "eos_id": 2, "pad_id": -1, **ids}
    spm.SentencePieceTrainer.train(
        input=f"{TEXT}/train.en,{TEXT}/train.de",
        model_prefix=str(directory / "spm"),
        vocab_size=vocab_size,
        minloglevel=2,
        **ids,
    )
    model = str(directory / "spm.model")
    if ids["bos_id"] != 1:
        return model, Dictionary()
    d = Dictionary()
    for symbol in spm_symbols(model)[4:]:
        d.add_symbol(symbol)
    return model, d


def hf_dir(
    path: Path,
    cls: str,
    spm: Tuple[str, Dictionary],
    safetensors: bool = True,
    seed: int = 0,
    zero_types: bool = False,
    shard: str = "",
    **sizes,
):
    """``transformers.<cls>`` (3 labels for a classifier; ``sizes`` over :data:`CONFIG`)
    saved as a released directory: safetensors as transformers 5 writes them, else
    ``pytorch_model.bin`` as transformers 4 wrote it (tied copies and the position-id buffer
    included); the token types random unless ``zero_types`` (as every converted XLM-R);
    ``shard``: safetensors shards of at most that size and their index."""
    import transformers

    model_file, d = spm
    torch.manual_seed(seed)
    config = transformers.XLMRobertaConfig(vocab_size=len(d), num_labels=3, **{**CONFIG, **sizes})
    model = getattr(transformers, cls)(config).eval()
    with torch.no_grad():
        types = model.base_model.embeddings.token_type_embeddings.weight
        types.zero_() if zero_types else types.normal_(0, 0.02)
        if hasattr(model, "lm_head"):  # a trained head has a bias
            model.lm_head.bias.normal_(0, 0.02)
    if safetensors:
        model.save_pretrained(path, **({"max_shard_size": shard} if shard else {}))
    else:
        model.config.save_pretrained(path)
        state = model.state_dict()
        positions = torch.arange(config.max_position_embeddings)[None]
        state[f"{model.base_model_prefix}.embeddings.position_ids"] = positions
        torch.save(state, path / "pytorch_model.bin")
    shutil.copyfile(model_file, path / "sentencepiece.bpe.model")
    with open(model_file, "rb") as f:
        fast_tokenizer(f.read(), d.symbols).save(str(path / "tokenizer.json"))
    return model
