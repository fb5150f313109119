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
* ``dwa`` (XLM-Align): seconds per update vs ``masked_lm`` (and vs ``tlm``), and the share
  of a ``dwa`` update spent self-labelling: the no-grad labelling forward plus Sinkhorn and
  filtering (``dwa_selflabel_share``), and Sinkhorn + filtering alone (``sinkhorn_share``;
  the issue's target: <= 2%).
* NMT: ``veco_transformer`` vs fairseq ``transformer`` of the same shape: training
  tokens/second and beam-search (beam 5) sentences/second.

Beside each time ratio: the FLOP ratio of the same steps (``benchmarks/flops.py``, the
ratio the step would have at a constant FLOP rate), and on CPU the time ratio in this
process's CPU time (``cpu ratio``: steadier than wall time on a shared machine), on CUDA
the MFU (fp32 dense peak of the device, ``flops.PEAK_FLOPS``).

Peak memory: on CUDA ``torch.cuda.max_memory_allocated``; on CPU (no allocator
statistics) the peak of activations saved for backward, counted through
``torch.autograd.graph.saved_tensors_hooks`` (distinct storages), plus parameters,
gradients and Adam state.

    python benchmarks/run.py [--json PATH] [--layers 4 --dim 256 --ffn 1024 --heads 4]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from typing import Callable, Dict, List

import numpy as np
import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # the shared helpers: tests/helpers
import flops  # noqa: E402
from common import encoder_size_flags, write_json  # noqa: E402

PIECES_PER_WORD = (0.6, 0.3, 0.1)  # share of words of 1, 2, 3 pieces


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--json", help="write the flat ratio object here")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--ffn", type=int, default=1024)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=8000)
    p.add_argument("--pairs", type=int, default=16, help="pairs per sub-batch (mono and bi)")
    p.add_argument("--min-len", type=int, default=20)
    p.add_argument("--max-len", type=int, default=60)
    p.add_argument("--dict-entries", type=int, default=2000, help="word-list entries (align_mlm)")
    p.add_argument("--rounds", type=int, default=5, help="timed rounds (median reported)")
    p.add_argument("--beam-sentences", type=int, default=16)
    p.add_argument("--skip-nmt", action="store_true")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args(argv)


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


def pretraining_batches(d, a, rng) -> Dict:
    from fairseq.data import ListDataset

    from veco_plugin.data.masking import MaskingScheme
    from veco_plugin.data.pair_dataset import VecoPairDataset

    batch = {}
    for kind, prob in (("mono", 0.15), ("bi", 0.25)):
        lines = [
            torch.from_numpy(np.append(rng.integers(d.nspecial, len(d) - 1, n), d.eos()))
            for n in rng.integers(a.min_len, a.max_len, 2 * a.pairs)
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


def static_bytes(model) -> int:
    # parameters + gradients + two Adam moments
    return 4 * sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)


def measure(update: Callable[[], None], model, device: str) -> Dict[str, float]:
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        update()
        torch.cuda.synchronize()
        return {"time": time.perf_counter() - start, "mem": torch.cuda.max_memory_allocated()}
    peak = SavedTensorPeak()
    start, cpu = time.perf_counter(), time.process_time()
    with torch.autograd.graph.saved_tensors_hooks(peak.pack, peak.unpack):
        update()
    return {
        "time": time.perf_counter() - start,
        "cpu": time.process_time() - cpu,  # this process only: steadier on a shared machine
        "mem": peak.peak + static_bytes(model),
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


def pretraining(a) -> Dict[str, float]:
    from fairseq import criterions, models
    from fairseq.criterions import CRITERION_DATACLASS_REGISTRY
    from fairseq.criterions.masked_lm import MaskedLmConfig

    from tests.helpers.toy import toy_dictionary
    from veco_plugin.data.dictionary import DictionaryTask
    from veco_plugin.objectives import (
        OBJECTIVES,
        WORD_ALIGNMENTS,
        WORD_LIST,
        benchmark_variants,
        build_criterion,
    )
    from veco_plugin.terms.word_alignment import DenoisingAlignmentTerm

    d = toy_dictionary(a.vocab)
    task = DictionaryTask(d)
    rng = np.random.default_rng(a.seed)
    batch = pretraining_batches(d, a, rng)
    needs = {need for row in OBJECTIVES if row.benchmark for need in row.needs}
    if WORD_ALIGNMENTS in needs:  # every variant gets the same batches
        batch["bi"]["links"] = band_links(batch["bi"], d.pad(), rng)
        links, tokens = batch["bi"]["links"], batch["bi"]["pair_tokens"]
        pieces = int(tokens[: len(links)].ne(d.pad()).sum()) - 2 * len(links)
        print(f"word alignments: {int(links.sum())} piece links, {pieces} source pieces")
    size = flops.ModelSize(a.layers, a.dim, a.ffn, len(d))
    shapes = {kind: flops.sub_batch(b, d.pad()) for kind, b in batch.items()}
    batch = to_device(batch, a.device)
    scratch = tempfile.TemporaryDirectory(prefix="veco-bench-")
    paths = word_list(d, a.dict_entries, scratch.name, rng) if WORD_LIST in needs else {}

    def built(name, settings):  # a criterion saving next to the checkpoints saves in scratch
        fields = CRITERION_DATACLASS_REGISTRY[name].__dataclass_fields__
        extra = {"save_dir": scratch.name} if "save_dir" in fields else {}
        return build_criterion(name, task, **settings, **extra)

    roberta = (
        models.ARCH_MODEL_REGISTRY["roberta"]
        .build_model(fairseq_args("roberta", size_flags(a)), task)
        .to(a.device)
    )
    masked_lm = criterions.CRITERION_REGISTRY["masked_lm"](MaskedLmConfig(tpu=False), task)
    objectives = {
        name: built(criterion, settings)
        for name, (criterion, settings) in benchmark_variants(**paths).items()
    }
    vecos = {}  # one veco per model shape: the extensions its terms add (pointer network, ...)
    for criterion in objectives.values():
        if criterion.extensions not in vecos:
            torch.manual_seed(a.seed)
            veco = models.ARCH_MODEL_REGISTRY["veco_base"].build_model(
                fairseq_args("veco_base", size_flags(a)), task
            )
            criterion.extend_model(veco)
            vecos[criterion.extensions] = veco.to(a.device)
    model_of = {name: vecos[c.extensions] for name, c in objectives.items()}

    def mlm_loss(model):
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

    def objective(model, criterion):
        return lambda: criterion(model, batch)[0]

    trained = [roberta, *vecos.values()]
    opts = {id(m): torch.optim.Adam(m.parameters(), lr=1e-5) for m in trained}

    def update(model, loss_fn):
        def step():
            def body():
                opts[id(model)].zero_grad(set_to_none=True)
                loss_fn().backward()
                opts[id(model)].step()

            return measure(body, model, a.device)

        return step

    variants = {"masked_lm": update(roberta, lambda: mlm_loss(roberta))}
    for name, criterion in objectives.items():
        variants[name] = update(model_of[name], objective(model_of[name], criterion))
    dwa = objectives["dwa"]
    aligner = next(t for t in dwa.terms if isinstance(t, DenoisingAlignmentTerm))
    labelled = aligner.resolve_layers(a.layers)["label"]
    variants.update(self_labelling(model_of["dwa"], labelled, batch["bi"], d, a.device))
    for model in trained:
        model.train()
    r = run_rounds(variants, a.rounds)
    labelling = {k: r.pop(k)["time"] / r["dwa"]["time"] for k in ("selflabel", "sinkhorn")}
    base = r["masked_lm"]
    print(
        f"\npre-training, {a.layers} layers x {a.dim} dim, {a.pairs} mono + {a.pairs} bi pairs, "
        f"device {a.device}"
    )
    tlm = r["tlm"]
    step_flops = {name: flops.step_flops(name, size, shapes)["total"] for name in r}
    # CPU: the same ratio in this process's CPU time; CUDA: model FLOPs utilisation (fp32)
    device_name = torch.cuda.get_device_name() if a.device.startswith("cuda") else ""
    for name, m in r.items():
        m["flop_ratio"] = step_flops[name] / step_flops["masked_lm"]
        m["extra"] = (
            m["cpu"] / base["cpu"]
            if "cpu" in m
            else flops.mfu(step_flops[name], m["time"], device_name, "fp32")
        )
    extra = "cpu ratio" if "cpu" in base else "MFU"
    print(
        f"{'objective':<22}{'s/update':>10}{'ratio':>8}{extra:>10}{'FLOPs x':>9}{'vs tlm':>8}"
        f"{'peak MB':>10}{'ratio':>8}"
    )
    for name, m in r.items():
        print(
            f"{name:<22}{m['time']:>10.4f}{m['time'] / base['time']:>8.2f}"
            f"{m['extra'] if m['extra'] is not None else float('nan'):>10.3f}"
            f"{m['flop_ratio']:>9.3f}{m['time'] / tlm['time']:>8.2f}"
            f"{m['mem'] / 2**20:>10.1f}{m['mem'] / base['mem']:>8.2f}"
        )
    saved = 1 - r["ca_mlm"]["time"] / r["ca_mlm_nostopgrad"]["time"]
    flops_saved = 1 - step_flops["ca_mlm"] / step_flops["ca_mlm_nostopgrad"]
    print(
        f"stop-gradient saves {100 * saved:.1f}% of a CA-MLM update's time "
        f"({100 * flops_saved:.1f}% of its FLOPs)"
    )
    print(
        f"dwa: {r['dwa']['time'] / r['tlm']['time']:.2f}x a tlm update; self-labelling "
        f"{100 * labelling['selflabel']:.1f}% of it (forward + OT), Sinkhorn + filtering "
        f"{100 * labelling['sinkhorn']:.1f}%"
    )
    ratios = {}
    for name in objectives:
        ratios[f"{name}_time_ratio"] = r[name]["time"] / base["time"]
        ratios[f"{name}_mem_ratio"] = r[name]["mem"] / base["mem"]
        ratios[f"{name}_time_ratio_vs_tlm"] = r[name]["time"] / tlm["time"]
        ratios[f"{name}_flop_ratio"] = r[name]["flop_ratio"]
        ratios[f"{name}_{'cpu_time_ratio' if 'cpu' in base else 'mfu'}"] = r[name]["extra"]
    scratch.cleanup()
    return {
        **ratios,
        "stopgrad_time_saving": saved,
        "stopgrad_flop_saving": flops_saved,
        "dwa_tlm_time_ratio": r["dwa"]["time"] / r["tlm"]["time"],
        "dwa_selflabel_share": labelling["selflabel"],
        "sinkhorn_share": labelling["sinkhorn"],
    }


def self_labelling(model, layer: int, bi: Dict, d, device: str) -> Dict[str, Callable[[], Dict]]:
    """Timed pieces of a ``dwa`` update's self-labelling on the bilingual batch ``bi``:
    ``selflabel`` = the no-grad forward of the unmasked pair + Sinkhorn + filtering,
    ``sinkhorn`` = Sinkhorn + filtering alone (on that forward's hidden states)."""
    from veco_plugin.alignment import self_label
    from veco_plugin.modules.pointer_network import split_pair, word_positions

    pad, lengths, width = d.pad(), bi["first_lengths"], bi["pair_tokens"].size(1)
    clean = torch.where(bi["concat_target"].ne(pad), bi["concat_target"], bi["concat_tokens"])
    real = word_positions(clean, lengths, width, pad, d.bos(), d.eos())

    def hidden():
        request = {"mode": "self_label", "tokens": clean, "layer": layer}
        return model(requests={"l": request})["l"]["hidden"]

    def links(h):
        return self_label(*split_pair(h, lengths, width), *real)

    fixed = hidden()

    def timed(fn):
        def step():
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            start = time.perf_counter()
            fn()
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            return {"time": time.perf_counter() - start}

        return step

    return {"selflabel": timed(lambda: links(hidden())), "sinkhorn": timed(lambda: links(fixed))}


# --- NMT --------------------------------------------------------------------------------


def nmt(a) -> Dict[str, float]:
    from fairseq import criterions, models
    from fairseq.sequence_generator import SequenceGenerator

    from tests.helpers.toy import toy_dictionary
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


def main(argv=None):
    a = parse_args(argv)
    from fairseq import utils

    utils.import_user_module(argparse.Namespace(user_dir=os.path.join(REPO, "veco_plugin")))
    torch.manual_seed(a.seed)
    result = dict(pretraining(a))
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
        write_json(a.json, result)
    return result


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
