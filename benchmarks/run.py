#!/usr/bin/env python
"""Side-by-side speed and memory ratios of our objectives and models vs fairseq's own.

Every variant runs on the *same* batches with the *same* model size, interleaved in
rounds (so machine noise hits all alike); each figure is the median over rounds.

* pre-training: seconds per update (forward + backward + Adam step) and peak memory
  of every benchmark variant of the objectives table (``veco_plugin/objectives.py``:
  ``ca_mlm`` (CA-MLM terms only; with and without stop-gradient), ``ca_mlm`` with
  TLM, ``tlm``, ``dwa``, ``align_mlm``, ``weam``...), each divided by fairseq's
  ``masked_lm`` update of a ``roberta`` of the same size on the same sentences (every x
  and y as its own sequence, same masks): ``<variant>_time_ratio``,
  ``<variant>_mem_ratio``; and by the ``tlm`` update: ``<variant>_time_ratio_vs_tlm``.
  The math: an S-stream layer costs ~1.33x an H-stream layer, so CA-MLM alone ~2.33x MLM.
  What a row needs beyond the text (the table's ``needs``) is generated once and shared:
  a word list (``--dict-entries`` resolved entries of random vocabulary ids, 1-3 pieces a
  word, the table's ``{word_list}/train.txt`` and ``heldout.txt``) and word alignments
  (``links`` of every bilingual pair: words of 1-3 pieces, ~85% of the source words linked
  near the diagonal, lifted to pieces as the data pipeline lifts them). The table's task
  flags (``--bi-mask-prob``) are not applied: every variant sees the same masks.
  Every variant, ``masked_lm`` too: tokens/s (the real tokens of both sub-batches per
  second), MFU and peak memory (``<variant>_tokens_per_s``, ``_mfu``, ``_peak_mem_mb``).
* ``dwa`` (XLM-Align): seconds per update vs ``masked_lm`` (and vs ``tlm``), and the share
  of a ``dwa`` update spent self-labelling: the no-grad labelling forward plus Sinkhorn and
  filtering (``dwa_selflabel_share``), and Sinkhorn + filtering alone (``sinkhorn_share``;
  the issue's target: <= 2%).
* NMT: ``veco_transformer`` vs fairseq ``transformer`` of the same shape: training
  tokens/second and beam-search (beam 5) sentences/second.
* ``--max-tokens-search``: instead of the above, the largest batch (pairs of
  ``--search-length``-token sentences, mono and bi) one update of ``masked_lm`` and of
  ``ca_mlm`` fits in, without and with ``--checkpoint-activations``: doubling, then
  bisection, each try one update, a CUDA out-of-memory error a miss (cache emptied
  between tries); ``max_tokens_<variant>[_checkpointed]`` and its ``_peak_mem_mb``.

Sizes: ``--size veco_base`` (or another ``veco_*`` architecture) takes its layers, width,
FFN and heads from ``veco_plugin/models/veco.py``'s ``ARCH_SIZES`` and XLM-R's vocabulary
(``flops.XLMR_VOCAB``); the shape flags given beside it win. Precision (``--dtype``):
``fp32``; ``bf16``: fp32 weights, the forward under ``torch.autocast`` in bfloat16;
``fp16``: as ``fairseq-train --fp16`` trains, the model in half precision and fairseq's
``FP16Optimizer`` (fp32 master weights, dynamic loss scaling, an overflow skips the
update) over fairseq's Adam. Otherwise ``torch.optim.Adam``.

Beside each time ratio: the FLOP ratio of the same steps (``benchmarks/flops.py``, the
ratio the step would have at a constant FLOP rate), and on CPU the time ratio in this
process's CPU time (``cpu ratio``: steadier than wall time on a shared machine), on CUDA
the MFU (the dense peak of the device for ``--dtype``, ``flops.PEAK_FLOPS``).

Peak memory of a variant: what its update holds, as if it ran alone: its parameters,
gradients and optimizer state (fp16: with fairseq's fp32 master copy), plus on CUDA the
rise of ``torch.cuda.max_memory_allocated`` during the update, on CPU (no allocator
statistics) the peak of activations saved for backward, counted through
``torch.autograd.graph.saved_tensors_hooks`` (distinct storages).

    python benchmarks/run.py [--json PATH] [--layers 4 --dim 256 --ffn 1024 --heads 4]
    python benchmarks/run.py --size veco_base --dtype bf16 --skip-nmt [--variants ca_mlm,tlm]
    python benchmarks/run.py --size veco_large --dtype bf16 --max-tokens-search
"""

import argparse
import contextlib
import gc
import os
import statistics
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # this checkout's veco_plugin, installed or not
import flops  # noqa: E402
from common import encoder_size_flags, toy_dictionary, write_json  # noqa: E402
from step_profile import profile_updates  # noqa: E402

PIECES_PER_WORD = (0.6, 0.3, 0.1)  # share of words of 1, 2, 3 pieces
SHAPE = {"layers": 4, "dim": 256, "ffn": 1024, "heads": 4, "vocab": 8000}  # without --size
SEARCHED = ("masked_lm", "ca_mlm")  # the variants --max-tokens-search sizes


def add_shape_flags(p: argparse.ArgumentParser) -> None:
    """``--size`` or ``--layers/--dim/--ffn/--heads/--vocab`` (:func:`fill_shape`)."""
    from veco_plugin.models.veco import ARCH_SIZES

    p.add_argument(
        "--size",
        choices=[f"veco_{name}" for name in ARCH_SIZES],
        help="that architecture's layers, dim, FFN and heads, XLM-R's 250002 embeddings",
    )
    for flag in ("--layers", "--dim", "--ffn", "--heads"):
        p.add_argument(flag, type=int)
    p.add_argument("--vocab", type=int, help="pieces besides the specials and <mask>")


def fill_shape(a: argparse.Namespace) -> None:
    """Each shape flag not given: the ``--size`` arch's (XLM-R's vocabulary), else SHAPE's."""
    from fairseq.data import Dictionary

    from veco_plugin.models.veco import ARCH_SIZES

    named = {}
    if a.size:
        named = dict(zip(("layers", "dim", "ffn", "heads"), ARCH_SIZES[a.size[len("veco_") :]]))
        named["vocab"] = flops.XLMR_VOCAB - len(Dictionary()) - 1  # with specials, <mask>
    for key, default in SHAPE.items():
        if getattr(a, key) is None:
            setattr(a, key, named.get(key, default))


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--json", help="write the flat ratio object here")
    add_shape_flags(p)
    p.add_argument("--dtype", choices=("fp32", "bf16", "fp16"), default="fp32")
    p.add_argument(
        "--variants",
        help="comma-separated benchmark variants timed beside masked_lm (default: all)",
    )
    p.add_argument("--checkpoint-activations", action="store_true")
    p.add_argument("--pairs", type=int, default=16, help="pairs per sub-batch (mono and bi)")
    p.add_argument("--min-len", type=int, default=20)
    p.add_argument("--max-len", type=int, default=60)
    p.add_argument("--dict-entries", type=int, default=2000, help="word-list entries (align_mlm)")
    p.add_argument("--rounds", type=int, default=5, help="timed rounds (median reported)")
    p.add_argument("--beam-sentences", type=int, default=16)
    p.add_argument("--skip-nmt", action="store_true")
    p.add_argument("--max-tokens-search", action="store_true")
    p.add_argument(
        "--profile",
        action="store_true",
        help="also profile each variant's update: the device's busy share, its work by kind",
    )
    p.add_argument("--search-length", type=int, default=250, help="tokens a sentence")
    p.add_argument("--search-max-pairs", type=int, default=4096, help="pairs a sub-batch")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    fill_shape(a)
    known = list(variant_table({}))
    a.variants = a.variants.split(",") if a.variants else known
    unknown = [name for name in a.variants if name not in known]
    if unknown:
        p.error(f"--variants {','.join(unknown)}: each one of {', '.join(known)}")
    return a


# --- building blocks --------------------------------------------------------------------


def fairseq_args(arch: str, extra: List[str]):
    from fairseq import options

    parser = options.get_training_parser()
    return options.parse_args_and_arch(
        parser, ["DATA", "--user-dir", os.path.join(REPO, "veco_plugin"), "--arch", arch, *extra]
    )


def size_flags(a) -> List[str]:
    return [
        *encoder_size_flags(a),
        "--dropout",
        "0.1",
        "--attention-dropout",
        "0.1",
    ]


def model_args(arch: str, a):
    """fairseq's args of ``arch`` at ``a``'s size; ``checkpoint_activations`` set as an
    attribute (fairseq's TransformerConfig reads it; its RoBERTa has no flag for it)."""
    args = fairseq_args(arch, size_flags(a))
    args.checkpoint_activations = a.checkpoint_activations
    return args


def pretraining_batches(d, pairs: int, lengths: Tuple[int, int], rng) -> Dict:
    """``mono`` and ``bi`` sub-batches of ``pairs`` pairs of sentences of ``lengths``
    [low, high) random ids (plus ``</s>``)."""
    from fairseq.data import ListDataset

    from veco_plugin.data.masking import MaskingScheme
    from veco_plugin.data.pair_dataset import VecoPairDataset

    batch = {}
    for kind, prob in (("mono", 0.15), ("bi", 0.25)):
        lines = [
            torch.from_numpy(np.append(rng.integers(d.nspecial, len(d) - 1, n), d.eos()))
            for n in rng.integers(*lengths, 2 * pairs)
        ]
        corpus = ListDataset(lines, np.array([len(t) for t in lines]))
        scheme = MaskingScheme(prob, d.index("<mask>"), d.pad(), d.nspecial, len(d))
        ds = VecoPairDataset.adjacent(corpus, name=kind, bos=d.bos(), max_len=512, scheme=scheme)
        batch[kind] = ds.collater([ds[i] for i in range(len(ds))])
    return batch


def word_list(d, entries: int, out: str, rng) -> Dict[str, str]:
    """Resolved word lists over random vocabulary ids of ``d`` (1-3 pieces a word):
    ``out/train.txt`` (``entries``) and ``out/heldout.txt`` (a quarter as many), the
    table's ``{word_list}``."""
    from veco_plugin.data.bilingual_dictionary import ResolvedDictionary, save_resolved

    def word():
        n = rng.choice(len(PIECES_PER_WORD), p=PIECES_PER_WORD) + 1
        return tuple(int(i) for i in rng.integers(d.nspecial, len(d) - 1, n))

    for name, n in (("train", entries), ("heldout", max(1, entries // 4))):
        pieces = [(word(), word()) for _ in range(n)]
        words = [(f"s{k}", f"t{k}") for k in range(n)]
        resolved = ResolvedDictionary.from_pieces(words, pieces, d.pad(), source="benchmark")
        save_resolved(resolved, os.path.join(out, f"{name}.txt"))
    return {"word_list": out}


def band_links(bi: Dict, pad: int, rng) -> torch.Tensor:
    """``links`` (B, W, W) bool of a bilingual batch (pair layout, ``<s>`` at 0): each
    side's pieces grouped into words of 1-3 pieces, ~85% of the source words linked to
    the target word on the diagonal (or one off it), lifted to pieces by
    ``word_links.piece_links`` (every piece of a to every piece of b)."""
    from veco_plugin.data.word_links import piece_links

    tokens, width = bi["pair_tokens"], bi["pair_tokens"].size(1)
    n = tokens.size(0) // 2
    lengths = tokens.ne(pad).sum(1).tolist()  # x rows, then y rows; with <s> and </s>
    links = torch.zeros(n, width, width, dtype=torch.bool)

    def words(pieces: int) -> np.ndarray:  # (pieces,) word number of each piece
        sizes = rng.choice(len(PIECES_PER_WORD), size=pieces, p=PIECES_PER_WORD) + 1
        return np.repeat(np.arange(pieces), sizes)[:pieces]

    for b in range(n):
        x_words, y_words = words(lengths[b] - 2), words(lengths[n + b] - 2)
        nx, ny = x_words[-1] + 1, y_words[-1] + 1
        src = np.flatnonzero(rng.random(nx) < 0.85)
        diagonal = np.rint(src * (ny - 1) / max(nx - 1, 1)).astype(np.int64)
        tgt = np.clip(diagonal + rng.choice([-1, 0, 1], len(src), p=[0.15, 0.7, 0.15]), 0, ny - 1)
        pairs, _ = piece_links(
            np.stack([src, tgt], 1), x_words, y_words, len(x_words), len(y_words)
        )
        links[b, pairs[:, 0], pairs[:, 1]] = True
    return links


def to_device(x, device):
    from fairseq import utils

    return utils.apply_to_sample(lambda t: t.to(device), x)


class SavedTensorPeak:
    """Peak bytes of distinct storages saved for backward during one update."""

    def __init__(self):
        self.live: Dict[int, int] = {}
        self.peak = 0

    def pack(self, t):
        key = t.untyped_storage().data_ptr()
        if key not in self.live:
            self.live[key] = t.untyped_storage().nbytes()
            self.peak = max(self.peak, sum(self.live.values()))
        return t

    def unpack(self, t):
        return t


def resident_bytes(model, opt) -> int:
    """Bytes of the distinct storages a model's training keeps between updates: its
    parameters and gradients, the optimizer's state and (fairseq's ``FP16Optimizer``)
    the fp32 master parameters and their gradients."""
    tensors = [t for p in model.parameters() for t in (p, p.grad)]
    if hasattr(opt, "fp32_params"):
        masters = opt.fp32_params
        masters = list(masters.values()) if isinstance(masters, dict) else masters
        tensors += [t for p in masters for t in (p, p.grad)]
        opt = opt.optimizer
    tensors += [t for state in opt.state.values() for t in state.values()]
    storages = {
        t.untyped_storage().data_ptr(): t.untyped_storage().nbytes()
        for t in tensors
        if torch.is_tensor(t)
    }
    return sum(storages.values())


def measure(update: Callable[[], None], model, opt, device: str) -> Dict[str, float]:
    resident = resident_bytes(model, opt)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        others = torch.cuda.memory_allocated() - resident  # the other variants' models
        torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        update()
        torch.cuda.synchronize()
        return {
            "time": time.perf_counter() - start,
            "mem": torch.cuda.max_memory_allocated() - others,
        }
    peak = SavedTensorPeak()
    start, cpu = time.perf_counter(), time.process_time()
    with torch.autograd.graph.saved_tensors_hooks(peak.pack, peak.unpack):
        update()
    return {
        "time": time.perf_counter() - start,
        "cpu": time.process_time() - cpu,  # this process only: steadier on a shared machine
        "mem": peak.peak + resident,
    }


def run_rounds(variants: Dict[str, Callable[[], Dict]], rounds: int) -> Dict[str, Dict[str, float]]:
    for fn in variants.values():  # warm-up
        fn()
    samples = {k: [] for k in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            samples[name].append(fn())
    return {
        name: {key: statistics.median(s[key] for s in runs) for key in runs[0]}
        for name, runs in samples.items()
    }


# --- pre-training -----------------------------------------------------------------------


class Variants:
    """The models, optimizers and losses of benchmark variants, one size and ``--dtype``:
    fairseq's ``masked_lm`` on a ``roberta``, each objective on a ``veco`` (one per set
    of extensions its terms add: pointer network, ...). ``loss[name](batch)`` is the
    step's loss, ``update(name, batch)`` one training update."""

    def __init__(self, a, task, names: Sequence[str], paths: Dict[str, str], scratch: str):
        from fairseq import criterions, models
        from fairseq.criterions import CRITERION_DATACLASS_REGISTRY
        from fairseq.criterions.masked_lm import MaskedLmConfig

        from veco_plugin.objectives import build_criterion

        self.a = a
        self.fp16 = fp16_config(a) if a.dtype == "fp16" else None
        self.model: Dict[str, torch.nn.Module] = {}
        self.loss: Dict[str, Callable[[Dict], torch.Tensor]] = {}
        self.criterion = {}
        self.overflows = 0
        for name, (criterion, settings) in variant_table(paths).items():
            if name in names:  # a criterion saving next to the checkpoints saves in scratch
                fields = CRITERION_DATACLASS_REGISTRY[criterion].__dataclass_fields__
                extra = {"save_dir": scratch} if "save_dir" in fields else {}
                self.criterion[name] = build_criterion(criterion, task, **settings, **extra)
        if "masked_lm" in names:
            roberta = models.ARCH_MODEL_REGISTRY["roberta"].build_model(
                model_args("roberta", a), task
            )
            masked_lm = criterions.CRITERION_REGISTRY["masked_lm"](MaskedLmConfig(tpu=False), task)
            self.model["masked_lm"] = roberta
            self.loss["masked_lm"] = lambda batch: mlm_loss(masked_lm, roberta, batch)
        vecos = {}  # one veco per model shape
        for name, criterion in self.criterion.items():
            if criterion.extensions not in vecos:
                torch.manual_seed(a.seed)
                veco = models.ARCH_MODEL_REGISTRY["veco_base"].build_model(
                    model_args("veco_base", a), task
                )
                criterion.extend_model(veco)
                vecos[criterion.extensions] = veco
            self.model[name] = vecos[criterion.extensions]
            self.loss[name] = lambda batch, c=criterion, m=self.model[name]: c(m, batch)[0]
        self.opt = {}
        for model in {id(m): m for m in self.model.values()}.values():
            model.to(a.device).train()
            self.opt[id(model)] = self._optimizer(model)

    def _optimizer(self, model):
        if self.fp16 is None:
            return torch.optim.Adam(model.parameters(), lr=1e-5)
        from fairseq import optim

        model.half()  # fairseq's Trainer with --fp16
        params = [p for p in model.parameters() if p.requires_grad]
        return optim.FP16Optimizer.build_optimizer(self.fp16, params)

    def optimizer(self, name: str):
        return self.opt[id(self.model[name])]

    def update(self, name: str, batch: Dict) -> None:
        opt = self.optimizer(name)
        if self.fp16 is not None:  # fairseq's Trainer.train_step with --fp16, clip-norm 0
            opt.zero_grad()
            opt.backward(self.loss[name](batch))
            try:
                opt.clip_grad_norm(0.0)  # the overflow check
                opt.step()
            except OverflowError:  # the scaler lowered the scale; fairseq skips the update
                self.overflows += 1
            return
        opt.zero_grad(set_to_none=True)
        with autocast(self.a):
            loss = self.loss[name](batch)
        loss.backward()
        opt.step()

    def timed(self, name: str, batch: Dict) -> Callable[[], Dict]:
        model, opt = self.model[name], self.optimizer(name)
        return lambda: measure(lambda: self.update(name, batch), model, opt, self.a.device)


def fp16_config(a):
    """fairseq-train's configuration with ``--fp16`` (what its ``FP16Optimizer`` reads);
    on CPU with ``--fp16-no-flatten-grads`` (the flat master copy is built on CUDA)."""
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    flags = ["--fp16", "--optimizer", "adam", "--lr", "1e-5"]
    if not a.device.startswith("cuda"):
        flags.append("--fp16-no-flatten-grads")
    return convert_namespace_to_omegaconf(fairseq_args("roberta", size_flags(a) + flags))


def autocast(a):
    if a.dtype != "bf16":
        return contextlib.nullcontext()
    return torch.autocast(device_type=a.device.split(":")[0], dtype=torch.bfloat16)


def mlm_loss(masked_lm, model, batch):
    # fairseq's own masked_lm on the same sentences: every x and y its own sequence
    return sum(
        masked_lm(
            model,
            {
                "net_input": {"src_tokens": b["pair_tokens"]},
                "target": b["pair_target"],
                "ntokens": b["ntokens"],
                "nsentences": b["nsentences"],
            },
        )[0]
        for b in batch.values()
    )


def variant_table(paths: Dict[str, str]) -> Dict:
    """Every benchmark variant of the table, ``objectives.benchmark_variants``: the path
    placeholders not in ``paths`` (needed by no variant run) read ``os.devnull``."""
    from veco_plugin.objectives import PATH_NEEDS, benchmark_variants

    return benchmark_variants(**{**{need: os.devnull for need in PATH_NEEDS}, **paths})


def world(a, pairs: int, lengths: Tuple[int, int], names: Sequence[str], scratch: str):
    """The dictionary, task, batch (with the needs of ``names``: word alignments) and the
    paths of the word list (when one of ``names`` needs it)."""
    from veco_plugin.data.dictionary import DictionaryTask
    from veco_plugin.objectives import OBJECTIVES, WORD_ALIGNMENTS, WORD_LIST

    d = toy_dictionary(a.vocab)
    rng = np.random.default_rng(a.seed)
    batch = pretraining_batches(d, pairs, lengths, rng)
    needs = {n for row in OBJECTIVES for v, _ in row.benchmark if v in names for n in row.needs}
    if WORD_ALIGNMENTS in needs:  # every variant gets the same batches
        batch["bi"]["links"] = band_links(batch["bi"], d.pad(), rng)
        links, tokens = batch["bi"]["links"], batch["bi"]["pair_tokens"]
        pieces = int(tokens[: len(links)].ne(d.pad()).sum()) - 2 * len(links)
        print(f"word alignments: {int(links.sum())} piece links, {pieces} source pieces")
    paths = word_list(d, a.dict_entries, scratch, rng) if WORD_LIST in needs else {}
    return d, DictionaryTask(d), batch, paths


def pretraining(a) -> Dict[str, Optional[float]]:
    from veco_plugin.terms.word_alignment import DenoisingAlignmentTerm

    names = ["masked_lm", *a.variants]
    scratch = tempfile.TemporaryDirectory(prefix="veco-bench-")
    d, task, batch, paths = world(a, a.pairs, (a.min_len, a.max_len), names, scratch.name)
    size = flops.ModelSize(a.layers, a.dim, a.ffn, len(d))
    shapes = {kind: flops.sub_batch(b, d.pad()) for kind, b in batch.items()}
    tokens = sum(s.tokens for s in shapes.values())  # real tokens a step reads, every variant
    batch = to_device(batch, a.device)
    v = Variants(a, task, names, paths, scratch.name)
    variants = {name: v.timed(name, batch) for name in names}
    if "dwa" in names:
        aligner = next(t for t in v.criterion["dwa"].terms if isinstance(t, DenoisingAlignmentTerm))
        labelled = aligner.resolve_layers(a.layers)["label"]
        variants.update(self_labelling(v.model["dwa"], labelled, batch["bi"], d, a))
    r = run_rounds(variants, a.rounds)
    labelling = {
        k: r.pop(k)["time"] / r["dwa"]["time"] for k in ("selflabel", "sinkhorn") if k in r
    }
    base = r["masked_lm"]
    print(
        f"\npre-training, {a.layers} layers x {a.dim} dim, vocabulary {len(d)}, {a.pairs} mono + "
        f"{a.pairs} bi pairs ({tokens} tokens), {a.dtype}, device {a.device}"
        + (", activations checkpointed" if a.checkpoint_activations else "")
    )
    tlm = r.get("tlm")
    step_flops = {name: flops.step_flops(name, size, shapes)["total"] for name in r}
    device_name = torch.cuda.get_device_name() if a.device.startswith("cuda") else ""
    for name, m in r.items():
        m["flop_ratio"] = step_flops[name] / step_flops["masked_lm"]
        m["mfu"] = flops.mfu(step_flops[name], m["time"], device_name, a.dtype)
    # CPU: the time ratio in this process's CPU time; CUDA: model FLOPs utilisation
    extra = "cpu ratio" if "cpu" in base else "MFU %"
    print(
        f"{'objective':<22}{'s/update':>10}{'tok/s':>10}{'ratio':>8}{extra:>10}{'FLOPs x':>9}"
        f"{'vs tlm':>8}{'peak MB':>10}{'ratio':>8}"
    )
    for name, m in r.items():
        if "cpu" in m:
            shown = m["cpu"] / base["cpu"]
        else:
            shown = float("nan") if m["mfu"] is None else 100 * m["mfu"]
        print(
            f"{name:<22}{m['time']:>10.4f}{tokens / m['time']:>10.0f}"
            f"{m['time'] / base['time']:>8.2f}{shown:>10.3f}{m['flop_ratio']:>9.3f}"
            f"{m['time'] / tlm['time'] if tlm else float('nan'):>8.2f}"
            f"{m['mem'] / 2**20:>10.1f}{m['mem'] / base['mem']:>8.2f}"
        )
    if v.overflows:
        print(f"fp16: {v.overflows} updates skipped on overflow (the loss scale adapting)")
    result: Dict[str, Optional[float]] = {"tokens_per_step": tokens}
    for name, m in r.items():
        result[f"{name}_s_per_update"] = m["time"]
        result[f"{name}_tokens_per_s"] = tokens / m["time"]
        result[f"{name}_mfu"] = m["mfu"]
        result[f"{name}_peak_mem_mb"] = m["mem"] / 2**20
        if name == "masked_lm":
            continue
        result[f"{name}_time_ratio"] = m["time"] / base["time"]
        result[f"{name}_mem_ratio"] = m["mem"] / base["mem"]
        result[f"{name}_flop_ratio"] = m["flop_ratio"]
        if tlm:
            result[f"{name}_time_ratio_vs_tlm"] = m["time"] / tlm["time"]
        if "cpu" in base:
            result[f"{name}_cpu_time_ratio"] = m["cpu"] / base["cpu"]
    if {"ca_mlm", "ca_mlm_nostopgrad"} <= set(r):
        saved = 1 - r["ca_mlm"]["time"] / r["ca_mlm_nostopgrad"]["time"]
        flops_saved = 1 - step_flops["ca_mlm"] / step_flops["ca_mlm_nostopgrad"]
        print(
            f"stop-gradient saves {100 * saved:.1f}% of a CA-MLM update's time "
            f"({100 * flops_saved:.1f}% of its FLOPs)"
        )
        result.update(stopgrad_time_saving=saved, stopgrad_flop_saving=flops_saved)
    if "dwa" in r and tlm:
        result["dwa_tlm_time_ratio"] = r["dwa"]["time"] / tlm["time"]
        print(
            f"dwa: {result['dwa_tlm_time_ratio']:.2f}x a tlm update; self-labelling "
            f"{100 * labelling['selflabel']:.1f}% of it (forward + OT), Sinkhorn + filtering "
            f"{100 * labelling['sinkhorn']:.1f}%"
        )
    if labelling:
        result.update(
            dwa_selflabel_share=labelling["selflabel"], sinkhorn_share=labelling["sinkhorn"]
        )
    if a.profile:
        result.update(profiles(a, v, names, batch))
    scratch.cleanup()
    return result


def profiles(a, v: Variants, names: Sequence[str], batch: Dict) -> Dict[str, float]:
    """``step_profile`` of each variant's update: ``<variant>_busy`` (the device's share of
    the wall time) and ``<variant>_share_<kind>`` (each kind's share of that work)."""
    out: Dict[str, float] = {}
    rows = {n: profile_updates(lambda n=n: v.update(n, batch), a.device) for n in names}
    kinds = sorted({k for r in rows.values() for k in r} - {"busy", "ms_per_update"})
    print(f"\nwhere an update's time goes (--profile, {a.device}): busy = the device's share")
    print(f"{'objective':<22}{'ms':>8}{'busy':>7}" + "".join(f"{k[:12]:>13}" for k in kinds))
    for name, r in rows.items():
        shares = "".join(f"{100 * r.get(k, 0.0):>12.1f}%" for k in kinds)
        print(f"{name:<22}{r['ms_per_update']:>8.1f}{100 * r['busy']:>6.0f}%{shares}")
        out[f"{name}_busy"] = r["busy"]
        out.update({f"{name}_share_{k}": r.get(k, 0.0) for k in kinds})
    return out


def largest_fitting(fits: Callable[[int], bool], limit: int) -> Tuple[int, List[Tuple[int, bool]]]:
    """The largest ``n`` in [1, ``limit``] with ``fits(n)`` (True up to some ``n``, False
    above it): doubling from 1, then bisection; 0 when 1 does not fit. Also every try,
    ``(n, fitted)`` in order."""
    tries: List[Tuple[int, bool]] = []

    def tried(n: int) -> bool:
        tries.append((n, fits(n)))
        return tries[-1][1]

    fitting, n = 0, 1
    while n < limit and tried(n):
        fitting, n = n, 2 * n
    missed = n if n < limit else None
    if missed is None:  # every doubling fitted: the limit itself
        if tried(limit):
            return limit, tries
        missed = limit
    while missed - fitting > 1:
        middle = (fitting + missed) // 2
        if tried(middle):
            fitting = middle
        else:
            missed = middle
    return fitting, tries


def max_tokens_search(a) -> Dict[str, Optional[float]]:
    """The largest batch of ``--search-length``-token sentences one update of each
    ``SEARCHED`` variant fits in, without and with activation checkpointing."""
    result: Dict[str, Optional[float]] = {}
    lengths = (a.search_length, a.search_length + 1)
    scratch = tempfile.TemporaryDirectory(prefix="veco-bench-")
    d, task, _, paths = world(a, 1, lengths, SEARCHED, scratch.name)
    print(
        f"\nlargest batch, {a.layers} layers x {a.dim} dim, vocabulary {len(d)}, sentences of "
        f"{a.search_length} tokens, {a.dtype}, device {a.device}"
    )
    print(f"{'objective':<22}{'checkpointed':>13}{'pairs':>7}{'tokens':>9}{'peak MB':>10}")
    for checkpoint in (False, True):
        a.checkpoint_activations = checkpoint
        for name in SEARCHED:
            pairs, tokens, mem = largest_batch(a, Variants(a, task, [name], paths, scratch.name), d)
            free_memory(a.device)  # the variant's model and optimizer are gone
            key = f"max_tokens_{name}" + ("_checkpointed" if checkpoint else "")
            result.update({key: tokens, f"{key}_pairs": pairs, f"{key}_peak_mem_mb": mem / 2**20})
            print(f"{name:<22}{str(checkpoint):>13}{pairs:>7}{tokens:>9}{mem / 2**20:>10.1f}")
    scratch.cleanup()
    return result


def largest_batch(a, v: Variants, d) -> Tuple[int, int, float]:
    """(pairs, real tokens, peak bytes) of the largest batch (``largest_fitting``) one
    update of the single variant of ``v`` fits in; (0, 0, 0.0) when none does."""
    (name,) = v.model
    model, opt = v.model[name], v.optimizer(name)
    lengths = (a.search_length, a.search_length + 1)
    fitted: Dict[int, Tuple[int, float]] = {}  # pairs -> (tokens, peak bytes)

    def fits(pairs: int) -> bool:
        batch = pretraining_batches(d, pairs, lengths, np.random.default_rng(a.seed))
        tokens = sum(int(b["pair_tokens"].ne(d.pad()).sum()) for b in batch.values())
        try:
            update = lambda: v.update(name, to_device(batch, a.device))  # noqa: E731
            fitted[pairs] = (tokens, measure(update, model, opt, a.device)["mem"])
        except torch.cuda.OutOfMemoryError:
            pass  # past this block no frame of the failed update holds its tensors
        opt.zero_grad()
        free_memory(a.device)
        return pairs in fitted

    pairs, tries = largest_fitting(fits, a.search_max_pairs)
    shown = [f"{n}" if ok else f"{n} (out of memory)" for n, ok in tries]
    print(f"{name}: tried {', '.join(shown)} pairs")
    return (pairs, *fitted.get(pairs, (0, 0.0)))


def free_memory(device: str) -> None:
    """Collect what is unreachable and give CUDA's cached blocks back."""
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()


def self_labelling(model, layer: int, bi: Dict, d, a) -> Dict[str, Callable[[], Dict]]:
    """Timed pieces of a ``dwa`` update's self-labelling on the bilingual batch ``bi``:
    ``selflabel`` = the no-grad forward of the unmasked pair + Sinkhorn + filtering,
    ``sinkhorn`` = Sinkhorn + filtering alone (on that forward's hidden states); under
    ``--dtype``'s autocast, as in the update."""
    from veco_plugin.alignment import self_label
    from veco_plugin.models.requests import SelfLabel
    from veco_plugin.modules.pair_layout import split_pair, word_positions

    pad, lengths, width = d.pad(), bi["first_lengths"], bi["pair_tokens"].size(1)
    clean = torch.where(bi["concat_target"].ne(pad), bi["concat_target"], bi["concat_tokens"])
    real = word_positions(clean, lengths, width, pad, d.bos(), d.eos())

    def hidden():
        return model(requests={"l": SelfLabel(clean, layer)})["l"].hidden

    def links(h):
        return self_label(*split_pair(h, lengths, width), *real)

    with autocast(a):
        fixed = hidden()
    cuda = a.device.startswith("cuda")

    def timed(fn):
        def step():
            if cuda:
                torch.cuda.synchronize()
            start = time.perf_counter()
            with autocast(a):
                fn()
            if cuda:
                torch.cuda.synchronize()
            return {"time": time.perf_counter() - start}

        return step

    return {"selflabel": timed(lambda: links(hidden())), "sinkhorn": timed(lambda: links(fixed))}


# --- NMT --------------------------------------------------------------------------------


def nmt(a) -> Dict[str, float]:
    from fairseq import criterions, models
    from fairseq.sequence_generator import SequenceGenerator

    from veco_plugin.data.dictionary import DictionaryTask

    d = toy_dictionary(a.vocab)
    task = DictionaryTask(d)
    shape = [
        "--encoder-layers",
        str(a.layers),
        "--decoder-layers",
        str(a.layers),
        "--encoder-embed-dim",
        str(a.dim),
        "--decoder-embed-dim",
        str(a.dim),
        "--encoder-ffn-embed-dim",
        str(a.ffn),
        "--decoder-ffn-embed-dim",
        str(a.ffn),
        "--encoder-attention-heads",
        str(a.heads),
        "--decoder-attention-heads",
        str(a.heads),
        "--dropout",
        "0.1",
        "--share-all-embeddings",
        "--max-source-positions",
        "512",
        "--max-target-positions",
        "512",
    ]
    # fairseq's transformer with VECO's conventions: learned positions, layernorm_embedding,
    # no embedding scale, GELU, post-LN
    same_shape = [
        "--encoder-learned-pos",
        "--decoder-learned-pos",
        "--layernorm-embedding",
        "--no-scale-embedding",
        "--activation-fn",
        "gelu",
    ]
    torch.manual_seed(a.seed)
    ours = (
        models.ARCH_MODEL_REGISTRY["veco_transformer_base"]
        .build_model(fairseq_args("veco_transformer_base", shape), task)
        .to(a.device)
    )
    theirs = (
        models.ARCH_MODEL_REGISTRY["transformer"]
        .build_model(fairseq_args("transformer", shape + same_shape), task)
        .to(a.device)
    )
    n_params = [sum(p.numel() for p in m.parameters()) for m in (ours, theirs)]
    assert n_params[0] == n_params[1], f"shapes differ: {n_params}"
    crit = criterions.CRITERION_REGISTRY["label_smoothed_cross_entropy"](task, False, 0.1)

    from fairseq.data import LanguagePairDataset

    rng = np.random.default_rng(a.seed)

    def sents(n):
        return [
            torch.from_numpy(np.append(rng.integers(d.nspecial, len(d) - 1, k), d.eos()))
            for k in rng.integers(a.min_len, a.max_len, n)
        ]

    src, tgt = sents(2 * a.pairs), sents(2 * a.pairs)
    lp = LanguagePairDataset(
        src, np.array([len(s) for s in src]), d, tgt, np.array([len(t) for t in tgt]), d
    )
    sample = to_device(lp.collater([lp[i] for i in range(len(lp))]), a.device)
    beam_lp = lp.collater([lp[i] for i in range(a.beam_sentences)])
    beam_sample = to_device(beam_lp, a.device)
    opts = {id(m): torch.optim.Adam(m.parameters(), lr=1e-5) for m in (ours, theirs)}

    def train(model):
        def step():
            model.train()
            start = time.perf_counter()
            opts[id(model)].zero_grad(set_to_none=True)
            crit(model, sample)[0].backward()
            opts[id(model)].step()
            return {"time": time.perf_counter() - start}

        return step

    def beam(model):
        gen = SequenceGenerator([model], d, beam_size=5, max_len_a=0, max_len_b=a.max_len)

        def step():
            model.eval()
            start = time.perf_counter()
            with torch.no_grad():
                gen.generate([model], beam_sample)
            return {"time": time.perf_counter() - start}

        return step

    r = run_rounds(
        {
            "veco_train": train(ours),
            "fairseq_train": train(theirs),
            "veco_beam": beam(ours),
            "fairseq_beam": beam(theirs),
        },
        a.rounds,
    )
    ntok = int(sample["ntokens"])
    tps = {k: ntok / r[f"{k}_train"]["time"] for k in ("veco", "fairseq")}
    sps = {k: a.beam_sentences / r[f"{k}_beam"]["time"] for k in ("veco", "fairseq")}
    print(f"\nNMT, {a.layers}+{a.layers} layers x {a.dim} dim")
    print(f"{'model':<20}{'train tok/s':>12}{'beam sent/s':>13}")
    print(f"{'veco_transformer':<20}{tps['veco']:>12.0f}{sps['veco']:>13.2f}")
    print(f"{'fairseq transformer':<20}{tps['fairseq']:>12.0f}{sps['fairseq']:>13.2f}")
    return {
        "nmt_train_tps_ratio": tps["veco"] / tps["fairseq"],
        "nmt_beam_sps_ratio": sps["veco"] / sps["fairseq"],
    }


def setup(a, argv: Optional[Sequence[str]]) -> Dict[str, object]:
    """What the figures were measured on, for the JSON."""
    cuda = a.device.startswith("cuda")
    return {
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "torch": torch.__version__,
        "cuda": torch.version.cuda if cuda else None,
        "dtype": a.dtype,
        "size": a.size,
        "shape": {k: getattr(a, k) for k in SHAPE},
        "command": " ".join(["benchmarks/run.py", *(sys.argv[1:] if argv is None else argv)]),
    }


def main(argv=None):
    a = parse_args(argv)
    from fairseq import utils

    utils.import_user_module(argparse.Namespace(user_dir=os.path.join(REPO, "veco_plugin")))
    torch.manual_seed(a.seed)
    if a.max_tokens_search:
        result = max_tokens_search(a)
    else:
        result = pretraining(a)
        result.update({"nmt_train_tps_ratio": None, "nmt_beam_sps_ratio": None})
        if not a.skip_nmt:
            result.update(nmt(a))
    print(
        "\n"
        + "\n".join(
            f"{k:<36} {'null' if v is None else f'{v:.3f}'}" for k, v in sorted(result.items())
        )
    )
    if a.json:
        write_json(a.json, {**result, **setup(a, argv)})
    return result


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
