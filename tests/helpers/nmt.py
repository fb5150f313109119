"""What the veco -> veco_transformer tests share: toy NMT models, the H/S streams they
must reproduce, pre-trained checkpoint files with their dict.txt, and veco-init-nmt."""

import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from fairseq.data import Dictionary

from tests.helpers.toy import ToyTask, build, model_args
from veco_plugin.cli import init_nmt
from veco_plugin.models.veco_transformer import VecoTransformerModel
from veco_plugin.nmt_init import InitReport, init_nmt_state
from veco_plugin.tasks.translation_from_pretrained_veco import (
    TranslationFromPretrainedVecoConfig,
    TranslationFromPretrainedVecoTask,
)

TOL = 1e-5


def build_nmt(
    dictionary: Dictionary,
    decoder_layers: int = 2,
    tied: Optional[Sequence[int]] = None,
    seed: int = 0,
    arch: str = "veco_transformer_tiny",
    bias: bool = False,
) -> VecoTransformerModel:
    """A toy ``veco_transformer`` (64 positions, dropout 0), freshly initialized."""
    torch.manual_seed(seed)
    args = model_args(
        arch,
        max_source_positions=64,
        max_target_positions=64,
        decoder_layers=decoder_layers,
        tie_decoder_to_encoder_layers=",".join(map(str, tied)) if tied else None,
        decoder_output_bias=bias,
    )
    return VecoTransformerModel.build_model(args, ToyTask(dictionary))


def initialized(
    veco, dictionary: Dictionary, layers: List[int], tied: bool = False
) -> Tuple[VecoTransformerModel, InitReport]:
    """``build_nmt`` initialized from ``veco`` (decoder layer j <- ``layers[j]``), in eval."""
    nmt = build_nmt(dictionary, len(layers), tied=layers if tied else None, seed=7)
    state, report = init_nmt_state(veco.state_dict(), nmt.state_dict(), layers)
    nmt.load_state_dict(state, strict=True)
    return nmt.eval(), report


def streams(veco, nmt, x: torch.Tensor, y: torch.Tensor):
    """Pre-trained H(x), S(y | H(x)) and NMT encoder(x), decoder(y), each (T, B, C);
    x: (B, Tx), y: (B, Ty)."""
    enc = veco.sentence_encoder
    pad = enc.padding_idx
    with torch.no_grad():
        h = enc(x)["encoder_out"][0]  # (Tx, B, C)
        s, _ = enc.forward_stream(y, h, x.eq(pad))  # (Ty, B, C)
        encoder_out = nmt.encoder(x, src_lengths=x.ne(pad).sum(1))
        features, _ = nmt.decoder(
            y, encoder_out=encoder_out, features_only=True, full_context_alignment=True
        )  # (B, Ty, C)
    return h, s, encoder_out["encoder_out"][0], features.transpose(0, 1)


def max_diff(a: torch.Tensor, b: torch.Tensor, tokens: torch.Tensor, pad: int) -> float:
    """max |a - b| over non-pad positions; a, b: (T, B, C), tokens: (B, T)."""
    keep = tokens.ne(pad).t().unsqueeze(-1)
    return ((a - b) * keep).abs().max().item()


def tiny_roberta(d: Dictionary, seed: int = 2):
    """A fairseq RoBERTa of veco_tiny's sizes (the XLM-R input), in eval."""
    return build(
        "roberta", d, seed=seed, encoder_layers=2, encoder_embed_dim=64,
        encoder_ffn_embed_dim=256, encoder_attention_heads=4,
    ).eval()  # fmt: skip


def dictionary_files(directory, n_words: int = 50, shuffle: bool = False) -> Dictionary:
    """Write ``directory/dict.txt`` (w0..w{n-1}; ``shuffle``: rotated by one) and return
    it with ``<mask>`` appended, as the tasks load it."""
    d = Dictionary()
    words = [f"w{i}" for i in range(n_words)]
    if shuffle:
        words = words[1:] + words[:1]
    for w in words:
        d.add_symbol(w)
    d.save(os.path.join(directory, "dict.txt"))
    d.add_symbol("<mask>")
    return d


def save_pretrained(model, args, path) -> None:
    """A pre-training checkpoint file as fairseq-train's legacy layout (``args``)."""
    torch.save({"model": model.state_dict(), "args": args, "cfg": None}, path)


def translation_task(directory, dict_path: str) -> TranslationFromPretrainedVecoTask:
    """``translation_from_pretrained_veco`` on ``directory`` with ``dict_path`` linked as
    its en and de dictionaries."""
    for lang in ("en", "de"):
        os.link(dict_path, os.path.join(directory, f"dict.{lang}.txt"))
    cfg = TranslationFromPretrainedVecoConfig(
        data=str(directory), source_lang="en", target_lang="de", train_subset="train"
    )
    return TranslationFromPretrainedVecoTask.setup_task(cfg)


def run_init_nmt(*argv) -> Dict[str, Any]:
    """``veco-init-nmt ARGV`` in process (errors raised, not exited); the checkpoint."""
    return init_nmt.main(init_nmt.get_parser().parse_args([str(a) for a in argv]))
