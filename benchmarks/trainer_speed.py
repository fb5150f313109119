#!/usr/bin/env python
"""Pre-training speed where users run it: fairseq's own ``Trainer``, built from
``fairseq-train`` command lines, beside fairseq's ``masked_lm`` on the same text.

Each row is a ``fairseq-train`` command line; the script builds what ``fairseq_cli.train``
builds from it (the task, model, criterion, ``Trainer``, the epoch iterator of
``checkpoint_utils.load_checkpoint``) and times ``Trainer.train_step`` over
``--updates`` updates after ``--warmup``: the optimizer, its ``--bf16`` wrapper,
clip-norm, the Trainer's own logging and syncs included. The rows:

* ``ca_mlm`` (the criterion's default: VECO's CA-MLM + TLM), ``tlm``: the plugin's
  objectives on a ``veco_pretraining`` DATA (En, De, En-De), ``--max-mono-positions`` =
  ``--max-bi-positions`` = ``--positions``;
* ``mlm``: the plugin's plain MLM (``veco_terms --terms mono_mlm=1``, En only);
* on request (``--rows``), the other objectives with their objectives-table flags:
  ``dwa``, ``align_mlm`` and ``dict_mlm`` (the En-De word list ``--word-list DIR``:
  ``train.txt``, ``heldout.txt``, as ``veco-gettext-dictionary`` writes them), ``weam``
  (a DATA with word alignments: ``prepare-pretraining-data.sh --align-with eflomal``);
* ``masked_lm``: fairseq's ``--task masked_lm --criterion masked_lm --arch roberta`` with
  the same sizes on the same English text (``DATA/mono/en``, fairseq-preprocess's
  files), pinned to rows of the plugin's width: ``--sample-break-mode complete
  --tokens-per-sample`` = ``--positions`` (complete sentences packed into rows of at
  most that many tokens; fairseq's defaults, 512-token blocks across sentences, would
  make short rows look fast).

Every row: ``--optimizer adam --clip-norm 1.0``, one ``--max-tokens``, dropout 0.1,
``--seed 1``; ``--bf16`` with ``--dtype bf16`` (CUDA). Per row:

* ``real_tokens_per_s``: the non-pad tokens of the updates' samples (each sentence
  once) per second of wall time;
* ``pad_share``: pad among the positions the encoder's layers run (hooks on the
  token embedding and the first layer, counted on the device);
* ``syncs_per_update``: data-dependent operators (``.item()``'s
  ``_local_scalar_dense``, ``nonzero``, ``masked_select``, boolean-mask indexing) and
  copies from the device to the host (CUDA), each a host wait on CUDA, over one whole
  ``train_step``, by the innermost plugin or fairseq line that issued them
  (``sync_sites``);
* ``ops_per_update``: aten operators dispatched in one update (on CUDA about the kernel
  launches);
* ``peak_mem_mb``: CUDA: ``max_memory_allocated`` over the timed updates; CPU: the
  parameters, gradients and optimizer state plus the peak of the tensors saved for
  backward (``run.py``'s count);
* ``flops_per_update`` (``benchmarks/flops.py``'s model of the measured batches, at the
  mean batch of the timed updates), ``flop_counter_ratio`` (that model over
  ``torch.utils.flop_counter`` on one update), ``mfu`` (CUDA: on the real tokens, the
  model's FLOPs scaled by 1 - pad share, over the device's dense peak);
* ``time_per_real_token_vs_masked_lm`` beside ``flop_ratio_vs_masked_lm`` (FLOPs per
  real token over ``masked_lm``'s).

``benchmarks/run.py`` steps its own loop (``torch.optim.Adam`` under autocast, no
Trainer): its figures are a private loop's, not these.

    python benchmarks/trainer_speed.py [--data DATA] [--size veco_base] [--max-tokens 4096]
        [--positions 128] [--updates 20 --warmup 5] [--rows ca_mlm,tlm,mlm,masked_lm]
        [--word-list DIR] [--pad-pairs] [--compile-layers] [--fused-lm-loss]
        [--dtype fp32|bf16] [--json PATH]

Without ``--data`` the DATA is made from the system's gettext catalogs (En-De) with
``scripts/prepare-pretraining-data.sh`` (else the repository's fixture text) under a
scratch directory.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional

import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # this checkout's veco_plugin, installed or not
import flops  # noqa: E402
from common import trainer_table, write_json  # noqa: E402
from run import SHAPE, SavedTensorPeak, resident_bytes  # noqa: E402
from sync_count import HostWaits  # noqa: E402

from veco_plugin.models.veco import ARCH_SIZES  # noqa: E402
from veco_plugin.objectives import WORD_LIST, objective  # noqa: E402

USER_DIR = os.path.join(REPO, "veco_plugin")
ROWS = ("ca_mlm", "tlm", "mlm", "masked_lm")
"""The default rows."""
MORE_ROWS = ("dwa", "align_mlm", "weam", "dict_mlm")
"""Rows on request: they need a word list or word alignments."""
FLOP_MODEL = {"mlm": "masked_lm", "ca_mlm": "ca_mlm_tlm", "dict_mlm": "tlm"}
"""flops.py's model of a row where its name differs: the ca_mlm criterion's default is
VECO's CA-MLM + TLM; DICT-MLM's code-switched inputs cost what MLM's masked ones do."""
CPU_SHAPE = tuple(SHAPE[k] for k in ("layers", "dim", "ffn", "heads"))


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", help="a veco_pretraining DATA with mono/en (default: made)")
    p.add_argument("--size", choices=[f"veco_{name}" for name in ARCH_SIZES],
                   help="that architecture's layers, dim, FFN and heads (default: 4 x 256, FFN "
                   "1024, 4 heads, run.py's CPU shape); the four flags below win")  # fmt: skip
    for flag in ("--layers", "--dim", "--ffn", "--heads"):
        p.add_argument(flag, type=int)
    p.add_argument("--max-tokens", type=int, default=4096)
    p.add_argument("--positions", type=int, default=128, help="the plugin's row width")
    p.add_argument("--updates", type=int, default=20, help="timed updates per row")
    p.add_argument("--warmup", type=int, default=5, help="untimed updates first")
    p.add_argument(
        "--rows",
        default=",".join(ROWS),
        help=f"of {', '.join(ROWS + MORE_ROWS)} (default: %(default)s)",
    )
    p.add_argument(
        "--word-list",
        help="align_mlm's and dict_mlm's En-De word lists "
        "(DIR/train.txt, DIR/heldout.txt: veco-gettext-dictionary's output)",
    )
    p.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32")
    p.add_argument("--pad-pairs", action="store_true",
                   help="the plugin's rows with veco_pretraining --pad-pairs (one pair a row, "
                   "padded: the layout before packing), for comparison")  # fmt: skip
    p.add_argument("--compile-layers", action="store_true",
                   help="the plugin's rows with veco's --compile-layers (torch.compile; "
                   "--warmup updates absorb the compiles: give it at least 3)")  # fmt: skip
    p.add_argument("--fused-lm-loss", action="store_true",
                   help="the plugin's rows with veco's --fused-lm-loss")  # fmt: skip
    p.add_argument("--json", help="write the figures here")
    a = p.parse_args(argv)
    named = ARCH_SIZES[a.size[len("veco_") :]] if a.size else CPU_SHAPE
    for key, value in zip(("layers", "dim", "ffn", "heads"), named):
        if getattr(a, key) is None:
            setattr(a, key, value)
    a.rows = a.rows.split(",")
    unknown = sorted(set(a.rows) - set(ROWS + MORE_ROWS))
    if unknown:
        p.error(f"--rows: {', '.join(unknown)} unknown; rows: {', '.join(ROWS + MORE_ROWS)}")
    listed = [row for row in a.rows if row in MORE_ROWS and WORD_LIST in objective(row).needs]
    if listed and not (a.word_list and os.path.isfile(os.path.join(a.word_list, "train.txt"))):
        verb = "needs" if len(listed) == 1 else "need"
        p.error(
            f"--rows {','.join(listed)} {verb} --word-list DIR with train.txt and heldout.txt "
            "(veco-gettext-dictionary --tgt-lang de --output DIR)"
        )
    if "weam" in a.rows and not a.data:
        p.error(
            "--rows weam needs --data: a DATA with word alignments "
            "(scripts/prepare-pretraining-data.sh --align-with eflomal)"
        )
    for flag in ("max_tokens", "positions", "updates", "layers", "dim", "ffn", "heads"):
        if getattr(a, flag) < 1:
            p.error(f"--{flag.replace('_', '-')} must be >= 1")
    if a.json and os.path.isdir(a.json):
        p.error(f"--json {a.json} is a directory: name the file to write")
    if a.data and not os.path.isdir(a.data):
        p.error(f"--data {a.data}: no such directory (a veco_pretraining DATA)")
    if a.warmup < 0:
        p.error("--warmup must be >= 0")
    if a.dtype == "bf16" and not torch.cuda.is_available():
        p.error("--dtype bf16 is fairseq-train --bf16: a CUDA device's (this machine has none)")
    return a


def made_data(scratch: str) -> str:
    """DATA from the gettext catalogs (or the fixture text), as the tests make it."""
    text = os.path.join(REPO, "tests", "fixtures", "text")
    if any(f.endswith(".mo") for f in _catalogs("de")):
        text = os.path.join(scratch, "gettext")
        subprocess.run(["veco-gettext-corpus", "--tgt-lang", "de", "--output", text], check=True)
    data = os.path.join(scratch, "data")
    script = os.path.join(REPO, "scripts", "prepare-pretraining-data.sh")
    vocab = "2000" if text.endswith("gettext") else "300"
    subprocess.run(
        ["bash", script, "--text", text, "--out", data, "--vocab-size", vocab], check=True
    )
    return data


def _catalogs(lang: str) -> List[str]:
    folder = f"/usr/share/locale/{lang}/LC_MESSAGES"
    return os.listdir(folder) if os.path.isdir(folder) else []


def size_flags(a: argparse.Namespace) -> List[str]:
    return [
        "--encoder-layers", str(a.layers), "--encoder-embed-dim", str(a.dim),
        "--encoder-ffn-embed-dim", str(a.ffn), "--encoder-attention-heads", str(a.heads),
    ]  # fmt: skip


def command(row: str, a: argparse.Namespace, data: str, save: str) -> List[str]:
    """The row's fairseq-train arguments."""
    common = [
        "--optimizer", "adam", "--adam-betas", "(0.9,0.98)", "--lr", "1e-4",
        "--clip-norm", "1.0", "--max-tokens", str(a.max_tokens), "--dropout", "0.1",
        "--attention-dropout", "0.1", "--max-update", "1000000", "--seed", "1",
        "--save-dir", save, "--disable-validation", "--num-workers", "0", "--no-save",
        "--log-format", "json", "--log-interval", "1000000",
        "--required-batch-size-multiple", "1",
    ]  # fmt: skip
    common += ["--bf16"] if a.dtype == "bf16" else [] if torch.cuda.is_available() else ["--cpu"]
    if row == "masked_lm":
        return [
            os.path.join(data, "mono", "en"), "--task", "masked_lm", "--criterion", "masked_lm",
            "--arch", "roberta", *size_flags(a), "--sample-break-mode", "complete",
            "--tokens-per-sample", str(a.positions), "--max-positions", str(a.positions),
            *common,
        ]  # fmt: skip
    positions = ["--max-mono-positions", str(a.positions), "--max-bi-positions", str(a.positions)]
    langs = (
        ["--mono-langs", "en"] if row == "mlm" else ["--mono-langs", "en,de", "--bi-pairs", "en-de"]
    )
    criterion = ["veco_terms", "--terms", "mono_mlm=1"] if row == "mlm" else [row]
    if row in MORE_ROWS:
        criterion += objective(row).train_args(word_list=a.word_list or "")
    layout = ["--pad-pairs"] if a.pad_pairs else []
    layout += ["--compile-layers"] if a.compile_layers else []
    layout += ["--fused-lm-loss"] if a.fused_lm_loss else []
    return [
        data, "--user-dir", USER_DIR, "--task", "veco_pretraining", *langs, "--arch", "veco_base",
        *size_flags(a), "--criterion", *criterion, *positions, *layout, *common,
    ]  # fmt: skip


class Built:
    """What fairseq_cli.train builds from a command line, and its batches."""

    def __init__(self, argv: List[str]):
        import numpy as np
        from fairseq import checkpoint_utils, options, tasks, utils
        from fairseq.dataclass.utils import convert_namespace_to_omegaconf
        from fairseq.trainer import Trainer

        parsed = options.parse_args_and_arch(options.get_training_parser(), argv)
        parsed.tpu = parsed.tpu and not torch.cuda.is_available()  # --bf16 on a CPU
        cfg = convert_namespace_to_omegaconf(parsed)
        np.random.seed(cfg.common.seed)
        utils.set_torch_seed(cfg.common.seed)
        self.task = tasks.setup_task(cfg.task)
        self.model = self.task.build_model(cfg.model)
        criterion = self.task.build_criterion(cfg.criterion)
        self.trainer = Trainer(cfg, self.task, self.model, criterion)
        _, self.epoch_itr = checkpoint_utils.load_checkpoint(cfg.checkpoint, self.trainer)
        self.batches = self._batches()
        self.pad = self.task.source_dictionary.pad()

    def _batches(self):
        from fairseq.data import iterators

        while True:
            itr = self.epoch_itr.next_epoch_itr(shuffle=True)
            self.trainer.begin_epoch(self.epoch_itr.epoch)
            yield from iterators.GroupedIterator(itr, 1)
            self.epoch_itr = self.trainer.get_train_iterator(self.epoch_itr.epoch + 1)

    def step(self, samples) -> None:
        from fairseq.logging import metrics

        with metrics.aggregate("train_inner"):
            self.trainer.train_step(samples)


def real_tokens(sample: Dict) -> int:
    """Non-pad tokens of a sample, each sentence once (both sub-batches of the plugin's)."""
    if "mono" in sample or "bi" in sample:
        return sum(b["ntokens"] for b in sample.values() if isinstance(b, dict))
    return int(sample["ntokens"])


class EmbeddedPositions:
    """Positions the encoder's layers run, and pad among them, summed on the device (no
    host wait): the tokens of the last token-embedding call, counted when the first
    layer starts (a stream embeds its rows, then runs them; a lookup that runs no layer,
    ``align_mlm``'s word-list embeddings, is not a position)."""

    def __init__(self, model, pad: int):
        embeddings = [
            m for m in model.modules() if isinstance(m, torch.nn.Embedding) and m.padding_idx == pad
        ]
        self.embedding = embeddings[0]  # the token embedding: the first with the pad index
        layer = next(m for m in model.modules() if isinstance(m, torch.nn.ModuleList))[0]
        self.pad = pad
        self.total = self.padded = 0
        self.tokens = None
        self.handles = [
            self.embedding.register_forward_hook(self._embedded),
            layer.register_forward_pre_hook(self._count),
        ]

    def _embedded(self, module, inputs, output):
        self.tokens = inputs[0]

    def _count(self, module, inputs):
        self.total += self.tokens.numel()
        self.padded = self.padded + self.tokens.eq(self.pad).sum()

    def share(self) -> float:
        for handle in self.handles:
            handle.remove()
        return float(self.padded) / max(self.total, 1)


def batch_flops(row: str, sample: Dict, m: "flops.ModelSize", pad: int) -> int:
    """flops.py's model of one update on ``sample``."""
    if row == "masked_lm":
        tokens = sample["net_input"]["src_tokens"]
        masked = int(sample["target"].ne(pad).sum())
        b = flops.SubBatch(tokens.size(0), tokens.size(1), masked, int(tokens.ne(pad).sum()))
        return flops.step_flops("masked_lm", m, {"mono": b})["total"]
    batch = {k: flops.sub_batch(v, pad) for k, v in sample.items() if isinstance(v, dict)}
    return flops.step_flops(FLOP_MODEL.get(row, row), m, batch)["total"]


def counted_flops(built: Built, samples) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        built.step(samples)
    return counter.get_total_flops()


def measure(row: str, a: argparse.Namespace, data: str, scratch: str) -> Dict:
    built = Built(command(row, a, data, os.path.join(scratch, row)))
    cuda = torch.cuda.is_available()
    batches = built.batches
    for _ in range(a.warmup):
        built.step(next(batches))
    size = flops.ModelSize(a.layers, a.dim, a.ffn, len(built.task.source_dictionary))
    timed = [next(batches) for _ in range(a.updates)]
    real = sum(real_tokens(s) for (s,) in timed)
    model_flops = sum(batch_flops(row, s, size, built.pad) for (s,) in timed) / a.updates
    positions = EmbeddedPositions(built.model, built.pad)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    for samples in timed:
        built.step(samples)
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    pad_share = positions.share()
    if cuda:
        peak = torch.cuda.max_memory_allocated()
    else:
        saved = SavedTensorPeak()
        with torch.autograd.graph.saved_tensors_hooks(saved.pack, saved.unpack):
            built.step(next(batches))
        optimizer = built.trainer.optimizer.optimizer
        peak = saved.peak + resident_bytes(built.model, getattr(optimizer, "optimizer", optimizer))
    with HostWaits() as ops:
        built.step(next(batches))
    probe = next(batches)
    counted = counted_flops(built, probe)
    (probe_sample,) = probe
    result = {
        "updates": a.updates,
        "seconds_per_update": seconds / a.updates,
        "real_tokens_per_update": real / a.updates,
        "real_tokens_per_s": real / seconds,
        "pad_share": pad_share,
        "syncs_per_update": sum(ops.calls.values()),
        "sync_sites": dict(ops.calls),
        "ops_per_update": ops.ops,
        "peak_mem_mb": peak / 2**20,
        "flops_per_update": model_flops,
        "flop_counter_ratio": batch_flops(row, probe_sample, size, built.pad) / max(counted, 1),
    }
    if cuda:
        dtype = "bf16" if a.dtype == "bf16" else "fp32"
        result["mfu"] = flops.mfu(model_flops * (1 - pad_share), seconds / a.updates,
                                  torch.cuda.get_device_name(), dtype)  # fmt: skip
    return result


def against_masked_lm(results: Dict[str, Dict]) -> None:
    """Each row's time per real token and FLOPs per real token over masked_lm's."""
    base = results.get("masked_lm")
    if not base:
        return
    for r in results.values():
        r["time_per_real_token_vs_masked_lm"] = base["real_tokens_per_s"] / r["real_tokens_per_s"]
        r["flop_ratio_vs_masked_lm"] = (r["flops_per_update"] / r["real_tokens_per_update"]) / (
            base["flops_per_update"] / base["real_tokens_per_update"]
        )


def main(argv: Optional[List[str]] = None) -> Dict:
    a = parse_args(argv)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", torch.get_num_threads())))
    with tempfile.TemporaryDirectory() as scratch:
        data = a.data or made_data(scratch)
        results = {row: measure(row, a, data, scratch) for row in a.rows}
    against_masked_lm(results)
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    print(
        f"fairseq Trainer, {a.layers} x {a.dim} (FFN {a.ffn}, {a.heads} heads), {a.dtype}, "
        f"--max-tokens {a.max_tokens}, rows of {a.positions}, {a.updates} timed updates "
        f"after {a.warmup}, {device}, the plugin's pairs "
        + ("padded one a row (--pad-pairs)" if a.pad_pairs else "packed")
        + (", layers compiled (--compile-layers)" if a.compile_layers else "")
        + (", --fused-lm-loss" if a.fused_lm_loss else "")
    )
    print(trainer_table(results))
    for name, r in results.items():
        for site, n in sorted(r["sync_sites"].items()):
            print(f"  {name}: {n} x {site}")
    if a.json:
        write_json(a.json, {"settings": vars(a), "device": device, "rows": results})
    return results


if __name__ == "__main__":
    main()
