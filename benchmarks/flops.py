#!/usr/bin/env python
"""Forward + backward FLOPs of one training step of each objective, from the model's
sizes and the batch's shapes, and MFU (model FLOPs utilisation).

FLOPs are those of the matrix products (2 per multiply-add), as
``torch.utils.flop_counter.FlopCounterMode`` counts them: the linear layers, the
attention products ``Q K^T`` and ``A V`` (over the padded shapes the kernels see), the
LM heads (dense + tied output projection at the masked positions), the pointer network
and Sinkhorn similarities (``dwa``), the word exchange (``weam``). Elementwise work
(softmax, layer norm, GELU, dropout) is not counted. Backward = 2x forward (gradients
of inputs and weights) except where an input needs no gradient: with the
stop-gradient, the cross-attention's key/value projections of H^L get only their
weight gradient (the cross terms' backward into H is gone); the ``dwa`` self-labelling
forward has no backward; WEAM's 0/1 link matrix has no gradient. Attention backward is
counted without the flash kernels' recomputation (model FLOPs, as MFU uses).

Per layer and token, with width C, FFN F: an H-stream layer costs 2(4C^2 + 2CF) plus
attention 4TC; an S-stream layer adds the cross-attention 2(4C^2) + 4SC: 1.33x at
F = 4C, so CA-MLM ~2.33x MLM.

    python benchmarks/flops.py [--layers 12 --dim 768 --ffn 3072 --heads 12 --vocab 250002]
        [--pairs 16 --length 128] [--tokens-per-second 1e5 --device "NVIDIA H100" --dtype bf16]
"""

import argparse
from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Tuple

XLMR_VOCAB = 250002  # XLM-R's (and VECO's) sentencepiece vocabulary with fairseq's specials

# dense peak FLOP/s by device-name fragment and dtype (vendor datasheets, no sparsity; the
# first fragment found in the name counts: "L40S" before "L4"). fp32 is the non-tensor-core
# rate: torch runs fp32 matrix products without TF32 unless told to
PEAK_FLOPS: Dict[str, Dict[str, float]] = {
    "H200": {"bf16": 989e12, "fp16": 989e12, "fp32": 67e12},
    "H100 PCIe": {"bf16": 756e12, "fp16": 756e12, "fp32": 51e12},
    "H100": {"bf16": 989e12, "fp16": 989e12, "fp32": 67e12},  # SXM
    "A100": {"bf16": 312e12, "fp16": 312e12, "fp32": 19.5e12},
    "V100": {"fp16": 125e12, "fp32": 15.7e12},
    "L40S": {"bf16": 362e12, "fp16": 362e12, "fp32": 91.6e12},
    "L4": {"bf16": 121e12, "fp16": 121e12, "fp32": 30e12},
    "A10": {"bf16": 125e12, "fp16": 125e12, "fp32": 31e12},
}

OBJECTIVES = (
    "masked_lm",
    "ca_mlm",
    "ca_mlm_nostopgrad",
    "ca_mlm_tlm",
    "tlm",
    "dwa",
    "align_mlm",
    "weam",
)


@dataclass(frozen=True)
class ModelSize:
    layers: int
    dim: int
    ffn: int
    vocab: int


@dataclass(frozen=True)
class SubBatch:
    """The shapes of one sub-batch (``mono`` or ``bi``) a step reads.

    ``rows``/``width``: ``pair_tokens`` (2B, T) one pair a row, x rows then y rows, or
    (2R, T) packed; ``masked``: its masked tokens; ``tokens``: its real tokens;
    ``concat_*``: ``concat_tokens`` (B or R, Tc) and its masked tokens (the TLM
    input); ``exchanged``: WEAM's masked pieces with a partner (0 without links);
    ``pairs``: B; ``side_width``: W, the longest side (XLM-Align's and WEAM's (B, W)
    halves)."""

    rows: int
    width: int
    masked: int
    tokens: int
    concat_width: int = 0
    concat_masked: int = 0
    exchanged: int = 0
    pairs: int = 0
    side_width: int = 0
    concat_rows: int = 0


def linear(n: int, d_in: int, d_out: int) -> int:
    """Forward FLOPs of ``n`` rows through a ``d_in x d_out`` linear layer."""
    return 2 * n * d_in * d_out


def attention(rows: int, queries: int, keys: int, dim: int) -> int:
    """Forward FLOPs of ``Q K^T`` and ``A V`` over all heads (C = heads x head dim)."""
    return 2 * 2 * rows * queries * keys * dim


def h_layers(m: ModelSize, rows: int, width: int, layers: Optional[int] = None) -> int:
    """Forward FLOPs of ``layers`` plug-out (H stream) layers on (rows, width)."""
    n, c = rows * width, m.dim
    per_layer = linear(n, c, 4 * c) + 2 * linear(n, c, m.ffn) + attention(rows, width, width, c)
    return (m.layers if layers is None else layers) * per_layer


def cross_blocks(m: ModelSize, rows: int, width: int) -> Tuple[int, int]:
    """Forward FLOPs the cross-attention adds to S-stream layers (queries and memory of
    (rows, width)): (all of it, the key/value projections of the memory alone)."""
    n, c = rows * width, m.dim
    memory = m.layers * linear(n, c, 2 * c)
    return m.layers * (linear(n, c, 2 * c) + attention(rows, width, width, c)) + memory, memory


def lm_head(m: ModelSize, masked: int) -> int:
    """RoBERTa's LM head at ``masked`` positions: dense + tied output projection."""
    return linear(masked, m.dim, m.dim) + linear(masked, m.dim, m.vocab)


def _mlm(m: ModelSize, b: SubBatch) -> int:
    return h_layers(m, b.rows, b.width) + lm_head(m, b.masked)


def _tlm(m: ModelSize, b: SubBatch) -> int:
    return h_layers(m, b.concat_rows, b.concat_width) + lm_head(m, b.concat_masked)


def step_flops(objective: str, m: ModelSize, batch: Mapping[str, SubBatch]) -> Dict[str, int]:
    """``{"forward", "backward", "total"}`` FLOPs of one step of ``objective`` (one of
    ``OBJECTIVES``, the benchmark's variant names) on ``batch`` {"mono", "bi"}."""
    if objective not in OBJECTIVES:
        raise ValueError(f"no FLOP model for {objective!r}: one of {', '.join(OBJECTIVES)}")
    fwd = bwd_only = 0  # bwd_only: backward FLOPs beyond 2x the forward (negative: saved)
    nograd = 0  # forward FLOPs without backward
    for kind, b in batch.items():
        if objective == "masked_lm" or (kind == "mono" and objective not in CA_MLM):
            fwd += _mlm(m, b)
        elif objective in CA_MLM:
            cross, memory = cross_blocks(m, b.rows, b.width)
            fwd += 2 * _mlm(m, b) + cross  # H stream + S stream (both LM heads)
            if objective != "ca_mlm_nostopgrad":
                bwd_only -= memory  # key/value projections of a detached H^L: dW only
            if objective == "ca_mlm_tlm" and kind == "bi":
                fwd += _tlm(m, b)
        else:  # the bilingual sub-batch of tlm, dwa, align_mlm, weam: TLM on x ‖ y
            fwd += _tlm(m, b)
            pairs, width, c = b.pairs, b.side_width, m.dim
            if objective == "dwa":
                # self-labelling: the unmasked pair's forward (every layer: forward_stream
                # keeps the labelling layer's states but runs the stack), Sinkhorn's
                # similarities; then the pointer network (q/k of both halves, two products)
                nograd += h_layers(m, b.concat_rows, b.concat_width)
                nograd += pairs * width * width * 2 * c
                fwd += linear(2 * pairs * width, c, 2 * c) + attention(pairs, width, width, c)
            elif objective == "weam":
                exchange = 2 * 2 * pairs * width * width * c  # A^T H, both sides
                fwd += exchange + 2 * linear(2 * pairs * width, c, c)
                fwd += linear(b.exchanged, c, m.vocab)
                bwd_only -= exchange // 2  # the links carry no gradient
    backward = 2 * fwd + bwd_only
    return {"forward": fwd + nograd, "backward": backward, "total": fwd + nograd + backward}


CA_MLM = ("ca_mlm", "ca_mlm_nostopgrad", "ca_mlm_tlm")


def sub_batch(batch: Mapping, pad: int) -> SubBatch:
    """The shapes of a collated sub-batch (``VecoPairDataset.collater``), padded or
    packed."""
    from veco_plugin.modules.pair_layout import Halves

    pair = batch["pair_tokens"]
    shape = dict(
        rows=pair.size(0),
        width=pair.size(1),
        masked=int(batch["pair_target"].ne(pad).sum()),
        tokens=int(pair.ne(pad).sum()),
        pairs=int(batch["nsentences"]),
    )
    if "concat_tokens" in batch:
        halves = Halves.of(batch)
        shape.update(
            concat_rows=batch["concat_tokens"].size(0),
            concat_width=batch["concat_tokens"].size(1),
            concat_masked=int(batch["concat_target"].ne(pad).sum()),
            side_width=halves.width,
        )
    if "links" in batch:
        links = batch["links"]
        x, y = halves.mask(batch["concat_target"].ne(pad))
        shape["exchanged"] = int((x & links.any(2)).sum() + (y & links.any(1)).sum())
    return SubBatch(**shape)


def peak_flops(device_name: str, dtype: str) -> Optional[float]:
    """Dense peak FLOP/s of the first ``PEAK_FLOPS`` entry named in ``device_name``
    (e.g. ``torch.cuda.get_device_name()``) for ``dtype`` (bf16, fp16, fp32); None if
    unknown."""
    for name, peaks in PEAK_FLOPS.items():
        if name.lower() in device_name.lower():
            return peaks.get(dtype)
    return None


def mfu(flops_per_step: float, seconds_per_step: float, device_name: str, dtype: str):
    """Achieved FLOP/s over the device's dense peak (None when the peak is unknown)."""
    peak = peak_flops(device_name, dtype)
    return None if peak is None else flops_per_step / seconds_per_step / peak


def uniform_batch(pairs: int, length: int, mask_prob: float = 0.15) -> Dict[str, SubBatch]:
    """Unpadded ``mono`` and ``bi`` sub-batches of ``pairs`` pairs of ``length`` tokens
    (WEAM: half the masked pieces have a partner)."""
    masked = round(2 * pairs * length * mask_prob)
    b = SubBatch(
        2 * pairs, length, masked, 2 * pairs * length, 2 * length, masked, masked // 2,
        pairs=pairs, side_width=length, concat_rows=pairs,
    )  # fmt: skip
    return {"mono": b, "bi": b}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--dim", type=int, default=768)
    p.add_argument("--ffn", type=int, default=3072)
    p.add_argument("--vocab", type=int, default=XLMR_VOCAB)
    p.add_argument("--pairs", type=int, default=16)
    p.add_argument("--length", type=int, default=128)
    p.add_argument("--tokens-per-second", type=float, help="measured, for MFU")
    p.add_argument("--device", default="NVIDIA H100 80GB HBM3")
    p.add_argument("--dtype", default="bf16", choices=("bf16", "fp16", "fp32"))
    a = p.parse_args(argv)
    m = ModelSize(a.layers, a.dim, a.ffn, a.vocab)
    batch = uniform_batch(a.pairs, a.length)
    tokens = sum(b.tokens for b in batch.values())
    base = step_flops("masked_lm", m, batch)["total"]
    print(f"{'objective':<20}{'GFLOP/step':>12}{'MFLOP/token':>13}{'x masked_lm':>13}")
    for name in OBJECTIVES:
        total = step_flops(name, m, batch)["total"]
        print(f"{name:<20}{total / 1e9:>12.1f}{total / tokens / 1e6:>13.1f}{total / base:>13.2f}")
        if a.tokens_per_second:
            u = mfu(total / tokens * a.tokens_per_second, 1.0, a.device, a.dtype)
            shown = "no peak for this device/dtype" if u is None else f"{100 * u:.1f}%"
            print(f"{'':<20}MFU at {a.tokens_per_second:g} tokens/s on {a.device}: {shown}")


if __name__ == "__main__":
    main()
