#!/usr/bin/env python
"""Fine-tuning speed of the token tasks (issue 31, part 4): ``veco_tagging`` and
``veco_span_qa`` beside fairseq's own ``sentence_prediction`` on the same model size, the
same tokens, in one process.

Every column is built as ``fairseq-train`` builds it, from its command line (``--task``,
``--criterion``, ``--arch``, the size flags, ``--optimizer adam``) over a scratch DATA that
holds only the dictionaries (``input0/dict.txt``, ``label/dict.txt``: what the three tasks'
``setup_task`` read):

* ``sentence_prediction``: fairseq's task and criterion on a ``roberta`` with its
  classification head (3 classes, XNLI's), the reference;
* ``veco_tagging``: the plugin's task and criterion on its ``veco`` token tagger (17 tags,
  UPOS's), plug-out: RoBERTa's encoder with one token head;
* ``veco_span_qa``: the plugin's task and criterion, a 2-class (start, end) token head;
* with ``transformers`` importable (a test extra, never a dependency of the plugin): its
  ``XLMRobertaForTokenClassification`` and ``XLMRobertaForQuestionAnswering`` at the same
  size, random weights, their own losses (``labels``, ``start_positions``/``end_positions``).

The batch: ``--batch`` windows ``<s> pieces </s>`` of ``--length`` tokens at most (lengths
drawn from [length/2, length], the longest exactly ``length``), right-padded: one
``src_tokens`` tensor that every column reads. Targets in each task's sample format: a class
per window (``sentence_prediction``); the tag of each word's first piece, ``<pad>`` at the
other pieces, words of 1-3 pieces (``veco_tagging``); a (start, end) per window, start <= end
inside the window (``veco_span_qa``).

One update, for every column alike: ``FairseqTask.train_step``'s ``model.train()``, the
criterion's ``forward(model, sample)`` (under ``torch.autocast`` in bfloat16 with ``--dtype
bf16``, fp32 weights: as fairseq's ``--amp`` autocasts the forward) and
``optimizer.backward(loss)``, then ``optimizer.step()`` and gradients zeroed (the Trainer's
scaling by the sample size and clipping left out: the same work in every column); fairseq's
``FairseqAdam`` (``--optimizer adam``) for every column, the transformers models too. The
columns run interleaved in rounds on the same batch (machine noise hits all alike), after
one warm-up update each; each figure is the median over ``--rounds``: seconds per update,
tokens/s (the batch's real tokens, padding not counted), the ratio of tokens/s to
``sentence_prediction``'s (issue 31's target for the two token tasks: >= 0.95), on the CPU
the same ratio in this process's CPU time (steadier on a shared machine), on CUDA the MFU
(``flops.py``: matrix-product FLOPs of the encoder and the head, 3x the forward), and the
peak memory of an update (``run.py``'s ``measure``).

Sizes: without ``--size``, 4 layers x 256 (FFN 1024, 4 heads) over an 8000-piece
vocabulary, 16 windows of 128 tokens: about 40 s on one CPU core (on the CPU torch runs one
thread unless ``--threads``: the figures stay steady on a shared machine). ``--size
veco_base`` (or another ``veco_*``) takes its shape from ``veco_plugin/models/veco.py``'s
``ARCH_SIZES`` and XLM-R's vocabulary; shape flags given beside it win.

    python benchmarks/token_tasks_speed.py [--size veco_small] [--batch 16 --length 128]
        [--rounds 10] [--dtype fp32|bf16] [--device cpu|cuda] [--threads N] [--no-hf]
        [--profile] [--json PATH]
"""

import argparse
import importlib.util
import os
import sys
import tempfile
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # this checkout's veco_plugin, installed or not
import flops  # noqa: E402
from common import encoder_size_flags, toy_dictionary, write_json  # noqa: E402
from run import (  # noqa: E402
    PIECES_PER_WORD,
    SHAPE,
    add_shape_flags,
    autocast,
    fairseq_args,
    fill_shape,
    measure,
    run_rounds,
    to_device,
)
from step_profile import profile_updates  # noqa: E402

TARGET = 0.95  # issue 31: tokens/s of the token tasks over sentence_prediction's
REFERENCE = "sentence_prediction"
# column -> (task = criterion, arch, head classes)
FAIRSEQ = {
    REFERENCE: ("roberta", 3),  # XNLI's classes
    "veco_tagging": ("veco_base", 17),  # UPOS's tags
    "veco_span_qa": ("veco_base", 2),  # start, end
}
HF = {  # column -> (transformers class, what it stands beside)
    "hf_token_classification": ("XLMRobertaForTokenClassification", "veco_tagging"),
    "hf_question_answering": ("XLMRobertaForQuestionAnswering", "veco_span_qa"),
}
TARGETED = ("veco_tagging", "veco_span_qa")


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--json", help="write the figures here")
    add_shape_flags(p)
    p.add_argument("--batch", type=int, default=16, help="windows a batch")
    p.add_argument("--length", type=int, default=128, help="tokens of the longest window")
    p.add_argument("--rounds", type=int, default=10, help="timed rounds (median reported)")
    p.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument(
        "--threads",
        type=int,
        help="torch's CPU threads (default on the CPU: 1, steadier on a shared machine)",
    )
    p.add_argument("--no-hf", action="store_true", help="skip the transformers columns")
    p.add_argument(
        "--profile",
        action="store_true",
        help="also profile each column's update: the device's busy share, its work by kind",
    )
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    fill_shape(a)
    if not 4 <= a.length <= 512:
        p.error(f"--length {a.length}: give 4 to 512 (the models' positions)")
    if a.batch < 1 or a.rounds < 1:
        p.error("--batch and --rounds: give at least 1")
    return a


# --- the batch ---------------------------------------------------------------------------


def windows(d, a, rng) -> torch.Tensor:
    """``src_tokens`` (B, T): ``<s> pieces </s>`` right-padded, lengths in [T/2, T], the
    first window exactly T (B = ``--batch``, T = ``--length``)."""
    lengths = rng.integers(max(a.length // 2, 3), a.length + 1, a.batch)
    lengths[0] = a.length
    tokens = torch.full((a.batch, a.length), d.pad(), dtype=torch.long)
    for b, n in enumerate(lengths):
        pieces = rng.integers(d.nspecial, len(d) - 1, n - 2)  # not <mask>, the last symbol
        tokens[b, :n] = torch.from_numpy(np.concatenate([[d.bos()], pieces, [d.eos()]]))
    return tokens


def first_pieces(real: int, rng) -> np.ndarray:
    """(real,) bool: the first piece of each word of 1-3 pieces, ``<s>`` and ``</s>`` not."""
    sizes = rng.choice(len(PIECES_PER_WORD), size=real, p=PIECES_PER_WORD) + 1
    starts = np.cumsum(np.concatenate([[1], sizes]))  # a word's first position; <s> is 0
    first = np.zeros(real, dtype=bool)
    first[starts[starts < real - 1]] = True
    return first


def samples(tokens: torch.Tensor, d, labels, rng) -> Dict[str, Dict[str, Any]]:
    """Each task's sample of ``tokens`` (B, T) in its datasets' format (``net_input`` as
    ``RightPadDataset`` and ``NumelDataset`` make it), random targets."""
    real = tokens.ne(d.pad())
    lengths = real.sum(1)
    B, T = tokens.shape
    common = {
        "id": torch.arange(B),
        "net_input": {"src_tokens": tokens, "src_lengths": lengths},
        "nsentences": B,
        "ntokens": int(lengths.sum()),
    }
    classes = FAIRSEQ[REFERENCE][1]
    sentence = torch.from_numpy(rng.integers(0, classes, B))  # (B,) label id - nspecial
    tags = torch.full((B, T), labels.pad(), dtype=torch.long)  # (B, T) <pad>: no tag
    spans = torch.zeros(B, 2, dtype=torch.long)  # (B, 2) start, end; (0, 0): no answer
    tag_count = FAIRSEQ["veco_tagging"][1]
    for b, n in enumerate(lengths.tolist()):
        first = torch.from_numpy(first_pieces(n, rng))
        drawn = torch.from_numpy(rng.integers(0, tag_count, n)) + labels.nspecial
        tags[b, :n] = torch.where(first, drawn, torch.tensor(labels.pad()))
        if rng.random() < 0.9:  # a window with the answer
            start = int(rng.integers(1, n - 1))
            spans[b] = torch.tensor([start, min(start + int(rng.integers(0, 5)), n - 2)])
    return {
        REFERENCE: {**common, "target": sentence},
        "veco_tagging": {**common, "target": tags},
        "veco_span_qa": {**common, "target": spans},
    }


# --- the columns -------------------------------------------------------------------------


class Column:
    """One model, its loss on a batch and fairseq's Adam: ``update()`` is one step."""

    def __init__(self, model, loss: Callable[[], torch.Tensor], optimizer, a):
        self.model, self.loss, self.optimizer, self.a = model, loss, optimizer, a

    def update(self) -> None:
        self.model.train()
        with autocast(self.a):  # the forward only, as FairseqTask.train_step with --amp
            loss = self.loss()
        self.optimizer.backward(loss)
        self.optimizer.step()
        self.optimizer.zero_grad()

    def timed(self) -> Callable[[], Dict[str, float]]:
        torch_opt = self.optimizer.optimizer  # FairseqAdam's torch optimizer: its state
        return lambda: measure(self.update, self.model, torch_opt, self.a.device)


def write_data(root: str, d, tags: int) -> str:
    """A DATA with only the dictionaries the tasks' ``setup_task`` read: ``input0`` (``d``
    without the ``<mask>`` the tasks add), ``label`` (``tags`` labels)."""
    for folder, symbols in (
        ("input0", [d[i] for i in range(d.nspecial, len(d) - 1)]),
        ("label", [f"T{k}" for k in range(tags)]),
    ):
        os.makedirs(os.path.join(root, folder))
        with open(os.path.join(root, folder, "dict.txt"), "w") as f:
            f.writelines(f"{s} 1\n" for s in symbols)
    return root


def fairseq_column(name: str, data: str, a, sample: Dict[str, Any]) -> Column:
    """``name``'s task, model, criterion and optimizer from its fairseq-train command line."""
    from fairseq import optim, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    arch, classes = FAIRSEQ[name]
    flags = ["--task", name, "--criterion", name, *encoder_size_flags(a)]
    flags += ["--dropout", "0.1", "--attention-dropout", "0.1", "--optimizer", "adam"]
    flags += ["--lr", "1e-5", "--max-positions", "512"]
    if name == REFERENCE:
        flags += ["--num-classes", str(classes)]
    args = fairseq_args(arch, flags)
    args.data = data
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    torch.manual_seed(a.seed)  # the same encoder weights in every column
    model = task.build_model(cfg.model).to(a.device)
    criterion = task.build_criterion(cfg.criterion)
    optimizer = optim.build_optimizer(cfg.optimizer, [p for p in model.parameters()])
    sample = to_device(sample, a.device)
    return Column(model, lambda: criterion(model, sample)[0], optimizer, a)


def hf_column(name: str, a, d, labels, sample: Dict[str, Any], adam_cfg) -> Column:
    """transformers' ``XLMRoberta...`` of ``name`` at ``a``'s size on ``sample``'s tokens."""
    import transformers
    from fairseq import optim

    class_name, beside = HF[name]
    config = transformers.XLMRobertaConfig(
        vocab_size=len(d),
        hidden_size=a.dim,
        num_hidden_layers=a.layers,
        num_attention_heads=a.heads,
        intermediate_size=a.ffn,
        max_position_embeddings=512 + d.pad() + 1,  # fairseq's learned positions, offset
        type_vocab_size=1,
        pad_token_id=d.pad(),
        bos_token_id=d.bos(),
        eos_token_id=d.eos(),
        layer_norm_eps=1e-5,
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        num_labels=FAIRSEQ[beside][1],
    )
    torch.manual_seed(a.seed)
    model = getattr(transformers, class_name)(config).to(a.device)
    optimizer = optim.build_optimizer(adam_cfg, [p for p in model.parameters()])
    tokens = sample["net_input"]["src_tokens"]
    inputs = {"input_ids": tokens, "attention_mask": tokens.ne(d.pad()).long()}
    target = sample["target"]
    if beside == "veco_tagging":  # -100: transformers' ignored label
        tagged = target.ne(labels.pad())
        inputs["labels"] = torch.where(tagged, target - labels.nspecial, torch.tensor(-100))
    else:
        inputs.update(start_positions=target[:, 0], end_positions=target[:, 1])
    inputs = to_device(inputs, a.device)
    return Column(model, lambda: model(**inputs).loss, optimizer, a)


def adam_config(data: str):
    """fairseq's ``--optimizer adam --lr 1e-5`` configuration (what every column uses)."""
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    flags = ["--task", REFERENCE, "--criterion", REFERENCE, "--num-classes", "3"]
    args = fairseq_args("roberta", flags + ["--optimizer", "adam", "--lr", "1e-5"])
    args.data = data
    return convert_namespace_to_omegaconf(args).optimizer


def hf_missing() -> Optional[str]:
    """Why the transformers columns cannot run (None: they can)."""
    if importlib.util.find_spec("transformers") is None:
        return "transformers is not importable (a test extra: pip install transformers)"
    return None


# --- the figures -------------------------------------------------------------------------


def step_flops(name: str, a, tokens: torch.Tensor) -> int:
    """Forward + backward matrix-product FLOPs of one update of ``name`` (3x the forward:
    the encoder over the padded (B, T), the head at ``<s>`` or at every position)."""
    B, T = tokens.shape
    size = flops.ModelSize(a.layers, a.dim, a.ffn, a.vocab)
    beside = HF.get(name, (None, name))[1]
    rows = B if beside == REFERENCE else B * T
    classes = FAIRSEQ[beside][1]
    head = flops.linear(rows, a.dim, classes)
    if not name.startswith("hf_"):  # RoBERTa's head: dense + out_proj; transformers': a linear
        head += flops.linear(rows, a.dim, a.dim)
    return 3 * (flops.h_layers(size, B, T) + head)


def table(r: Dict[str, Dict[str, float]], a, tokens: torch.Tensor, d) -> Dict[str, Any]:
    """Print the Markdown table; the flat figures of the JSON."""
    base, real = r[REFERENCE], int(tokens.ne(d.pad()).sum())
    cuda = a.device.startswith("cuda")
    device_name = torch.cuda.get_device_name() if cuda else ""
    extra = "MFU" if cuda else "CPU-time ratio"
    print(
        f"\n{a.layers} layers x {a.dim} dim (FFN {a.ffn}, {a.heads} heads), vocabulary "
        f"{len(d)}, {a.batch} windows x {a.length} tokens ({real} real), {a.dtype}, "
        f"device {a.device}, median of {a.rounds} rounds\n"
    )
    print(f"| column | s/update | tokens/s | x {REFERENCE} | {extra} | peak MB | >= {TARGET} |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    result: Dict[str, Any] = {"tokens_per_step": real}
    for name, m in r.items():
        ratio = base["time"] / m["time"]  # of tokens/s
        mfu = flops.mfu(step_flops(name, a, tokens), m["time"], device_name, a.dtype)
        if cuda:
            shown = "-" if mfu is None else f"{100 * mfu:.1f}%"
        else:
            shown = f"{base['cpu'] / m['cpu']:.3f}"
        verdict = ("met" if ratio >= TARGET else "MISSED") if name in TARGETED else ""
        print(
            f"| {name} | {m['time']:.4f} | {real / m['time']:,.0f} | {ratio:.3f} | {shown} "
            f"| {m['mem'] / 2**20:.1f} | {verdict} |"
        )
        result[f"{name}_s_per_update"] = m["time"]
        result[f"{name}_tokens_per_s"] = real / m["time"]
        result[f"{name}_ratio"] = ratio
        result[f"{name}_mfu"] = mfu
        result[f"{name}_peak_mem_mb"] = m["mem"] / 2**20
        if "cpu" in m:
            result[f"{name}_cpu_ratio"] = base["cpu"] / m["cpu"]
        if name in TARGETED:
            result[f"{name}_met"] = ratio >= TARGET
    for name, (class_name, beside) in HF.items():
        if name in r:
            vs = r[name]["time"] / r[beside]["time"]
            result[f"{beside}_vs_hf"] = vs
            print(f"\n{beside}: {vs:.3f}x the tokens/s of transformers' {class_name}", end="")
    print()
    return result


def profiles(columns: Dict[str, Column], a) -> Dict[str, float]:
    """``step_profile`` of each column's update (``<column>_busy``, ``<column>_share_<kind>``)."""
    out: Dict[str, float] = {}
    rows = {name: profile_updates(c.update, a.device) for name, c in columns.items()}
    kinds = sorted({k for row in rows.values() for k in row} - {"busy", "ms_per_update"})
    print(f"\nwhere an update's time goes (--profile, {a.device}): busy = the device's share")
    print("| column | ms | busy | " + " | ".join(kinds) + " |")
    print("| --- | ---: | ---: | " + " | ".join("---:" for _ in kinds) + " |")
    for name, row in rows.items():
        shares = " | ".join(f"{100 * row.get(k, 0.0):.1f}%" for k in kinds)
        print(f"| {name} | {row['ms_per_update']:.1f} | {100 * row['busy']:.0f}% | {shares} |")
        out[f"{name}_busy"] = row["busy"]
        out.update({f"{name}_share_{k}": row.get(k, 0.0) for k in kinds})
    return out


def setup(a, argv: Optional[Sequence[str]], hf_note: Optional[str]) -> Dict[str, Any]:
    """What the figures were measured on, for the JSON."""
    cuda = a.device.startswith("cuda")
    hf = None
    if hf_note is None:
        import transformers

        hf = transformers.__version__
    return {
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "torch": torch.__version__,
        "cuda": torch.version.cuda if cuda else None,
        "transformers": hf,
        "transformers_skipped": hf_note,
        "dtype": a.dtype,
        "size": a.size,
        "shape": {k: getattr(a, k) for k in SHAPE},
        "batch": a.batch,
        "length": a.length,
        "rounds": a.rounds,
        "command": " ".join(
            ["benchmarks/token_tasks_speed.py", *(sys.argv[1:] if argv is None else argv)]
        ),
    }


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    a = parse_args(argv)
    from fairseq import utils

    utils.import_user_module(argparse.Namespace(user_dir=os.path.join(REPO, "veco_plugin")))
    if a.threads or a.device == "cpu":
        torch.set_num_threads(a.threads or 1)
    rng = np.random.default_rng(a.seed)
    d = toy_dictionary(a.vocab)
    scratch = tempfile.TemporaryDirectory(prefix="veco-token-bench-")
    data = write_data(scratch.name, d, FAIRSEQ["veco_tagging"][1])
    from fairseq.data import Dictionary

    labels = Dictionary.load(os.path.join(data, "label", "dict.txt"))
    tokens = windows(d, a, rng)
    batch = samples(tokens, d, labels, rng)
    columns = {name: fairseq_column(name, data, a, batch[name]) for name in FAIRSEQ}
    hf_note = "--no-hf" if a.no_hf else hf_missing()
    if hf_note is None:
        adam = adam_config(data)
        for name, (_, beside) in HF.items():
            columns[name] = hf_column(name, a, d, labels, batch[beside], adam)
    else:
        print(f"transformers columns skipped: {hf_note}")
    r = run_rounds({name: c.timed() for name, c in columns.items()}, a.rounds)
    result = table(r, a, tokens, d)
    if a.profile:
        result.update(profiles(columns, a))
    scratch.cleanup()
    if a.json:
        write_json(a.json, {**result, **setup(a, argv, hf_note)})
    return result


if __name__ == "__main__":
    main()
