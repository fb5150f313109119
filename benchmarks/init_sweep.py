#!/usr/bin/env python
"""Does the VECO initialization still help after fine-tuning? A sweep, not a timed test.

On the quickstart's gettext En-De corpus (``scripts/quickstart.sh --data-only``): one
``ca_mlm`` pre-training to the largest budget, with checkpoints at every budget of
``--pretrain-updates`` (inverse_sqrt does not depend on ``--max-update``, so the checkpoint
at 500 updates of a 2000-update run is a 500-update run); ``veco-init-nmt`` from each;
then the same fine-tuning (flags, seed, data order, ``--finetune-updates``) from every
initialization and from random initialization, each validated every
``--eval-interval`` updates (label-smoothed valid loss in bits; greedy valid BLEU,
fairseq's ``--eval-bleu``). Printed: per fine-tuning checkpoint, valid BLEU and valid
loss of each VECO run *minus* its random-init twin (same architecture, same inputs):

    veco@B               pre-trained B updates, decoder from all layers (B in the budgets)
    veco@Bmax last:N     decoder from the last N layers (N = --last-n) vs a random N-layer
                         decoder
    veco@Bmax fairseq-inputs
                         --input-format fairseq (x </s>, decoder starts with </s>): before
                         the <s> fix, vs random init with the same inputs
    veco@Bmax lm-bias    veco-init-nmt --keep-output-bias (the LM head's output bias)
    veco@Bmax lr=X       --finetune-lr X (each of --lr-variants) vs random init at lr X

Budget 0 is random initialization. Defaults (tiny model, 2000 pre-training and 600
fine-tuning updates, 2 jobs of 1 thread) are sized for about an hour on 2 CPU cores (about
75 min measured here, on cores shared with two test suites; ``--no-variants`` runs only the
budget sweep, about half of it). Everything scales by flags, e.g. on a GPU::

    python benchmarks/init_sweep.py --run-dir runs/sweep-gpu --gpu --arch base \\
        --pretrain-updates 0,10000,20000,50000 --finetune-updates 20000 --eval-interval 2000 \\
        --pretrain-max-tokens 8192 --max-tokens 8192 --jobs 1 --threads 8

Re-running with the same ``--run-dir`` skips finished runs (``RUN/<run>/done``).
Writes ``RUN/sweep.json`` (every curve and every difference) and ``RUN/sweep.md``.
"""

import argparse
import concurrent.futures as futures
import json
import math
import os
import subprocess
import sys
import threading
from typing import Dict, List, Optional, Sequence

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER_DIR = os.path.join(REPO, "veco_plugin")
SIZES = {"tiny": 2, "small": 6, "base": 12, "large": 24}  # encoder layers per named arch


class SweepError(Exception):
    """A failed stage or bad flag; reported as one line."""


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--run-dir", default="runs/init_sweep", help="everything goes here")
    p.add_argument("--pretrain-updates", default="0,500,1000,2000",
                   help="pre-training budgets (0 = random init only)")  # fmt: skip
    p.add_argument("--finetune-updates", type=int, default=600)
    p.add_argument("--eval-interval", type=int, default=100)
    p.add_argument("--arch", default="tiny", choices=sorted(SIZES), help="veco_SIZE sizes")
    p.add_argument("--layers", type=int, help="override the encoder layers of --arch")
    p.add_argument("--dim", type=int, help="override the width of --arch")
    p.add_argument("--ffn", type=int, help="override the FFN width of --arch")
    p.add_argument("--heads", type=int, help="override the attention heads of --arch")
    p.add_argument("--last-n", type=int, help="the last:N variant [half the layers]")
    p.add_argument(
        "--lr-variants", default="", help="extra fine-tuning learning rates, e.g. 5e-4,1e-3"
    )
    p.add_argument("--no-variants", action="store_true",
                   help="only the budget sweep (no last:N, inputs, bias, lr runs)")  # fmt: skip
    p.add_argument("--variants", default="last,inputs,bias,lr",
                   help="which variants run at the largest budget: any of last (last:N), "
                   "inputs (fairseq inputs), bias (LM-head bias), lr (--lr-variants) "
                   "[%(default)s]")  # fmt: skip
    p.add_argument("--max-positions", type=int, default=256)
    p.add_argument("--vocab-size", type=int, default=4000)
    p.add_argument("--max-train-pairs", type=int, default=0, help="0 = all")
    p.add_argument("--valid-size", type=int, default=500)
    p.add_argument("--pretrain-max-tokens", type=int, default=2048)
    p.add_argument("--pretrain-lr", default="2e-3")
    p.add_argument("--pretrain-warmup", type=int, default=200)
    p.add_argument("--max-tokens", type=int, default=4096, help="fine-tuning tokens per batch")
    p.add_argument("--finetune-lr", default="2e-3")
    p.add_argument("--finetune-warmup", type=int, default=200)
    p.add_argument("--dropout", type=float, default=0.1, help="fine-tuning dropout")
    p.add_argument("--gpu", action="store_true", help="train on the GPU (default: --cpu)")
    p.add_argument("--jobs", type=int, default=2, help="runs side by side")
    p.add_argument("--threads", type=int, default=1, help="OMP threads per run")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--python", default=sys.executable)
    return p.parse_args(argv)


def budgets(text: str) -> List[int]:
    try:
        values = sorted({int(t) for t in text.split(",") if t.strip()})
    except ValueError:
        raise SweepError(f"--pretrain-updates {text!r}: expected integers like 0,500,1000")
    if not values or values[0] < 0 or values[-1] == 0:
        raise SweepError(f"--pretrain-updates {text!r}: give at least one budget > 0")
    return values


VARIANTS = ("last", "inputs", "bias", "lr")


def variants(a) -> List[str]:
    chosen = [] if a.no_variants else [v for v in a.variants.split(",") if v]
    unknown = [v for v in chosen if v not in VARIANTS]
    if unknown:
        raise SweepError(
            f"--variants {a.variants!r}: {unknown[0]} is not one of {','.join(VARIANTS)}"
        )
    return chosen


class Sweep:
    def __init__(self, a):
        self.a = a
        self.run = os.path.abspath(a.run_dir)
        self.budgets = budgets(a.pretrain_updates)
        self.variants = variants(a)
        if a.finetune_updates % a.eval_interval:
            raise SweepError("--finetune-updates must be a multiple of --eval-interval")
        self.layers = a.layers or SIZES[a.arch]
        self.last_n = a.last_n or max(1, self.layers // 2)
        self.bin = os.path.dirname(a.python)
        self.lock = threading.Lock()

    # --- running ------------------------------------------------------------------------

    def env(self) -> Dict[str, str]:
        e = dict(os.environ, PYTHONUNBUFFERED="1")
        e.update(OMP_NUM_THREADS=str(self.a.threads), MKL_NUM_THREADS=str(self.a.threads))
        e["PATH"] = self.bin + os.pathsep + e.get("PATH", "")
        return e

    def stage(self, name: str, cmd: Sequence[str]) -> str:
        """Run ``cmd`` once (``RUN/name/done`` marks it finished); its log path."""
        directory = os.path.join(self.run, name)
        log = os.path.join(directory, "log.txt")
        if os.path.exists(os.path.join(directory, "done")):
            self.say(f"[{name}] finished earlier: skipped")
            return log
        os.makedirs(directory, exist_ok=True)
        self.say(f"[{name}] start: {' '.join(cmd[:3])} ... (log {log})")
        with open(log, "w", encoding="utf-8") as f:
            f.write("$ " + " ".join(map(str, cmd)) + "\n")
            f.flush()
            proc = subprocess.run(list(map(str, cmd)), stdout=f, stderr=subprocess.STDOUT,
                                  env=self.env(), cwd=REPO)  # fmt: skip
        if proc.returncode != 0:
            raise SweepError(f"stage {name} failed (exit {proc.returncode}); see {log}")
        open(os.path.join(directory, "done"), "w").close()
        self.say(f"[{name}] done")
        return log

    def say(self, text: str) -> None:
        with self.lock:
            print(f"== {text}", flush=True)

    # --- stages -------------------------------------------------------------------------

    def device(self) -> List[str]:
        return [] if self.a.gpu else ["--cpu"]

    def size_flags(self) -> List[str]:
        a, out = self.a, []
        for flag, value in (("--encoder-layers", a.layers), ("--encoder-embed-dim", a.dim),
                            ("--encoder-ffn-embed-dim", a.ffn),
                            ("--encoder-attention-heads", a.heads)):  # fmt: skip
            if value:
                out += [flag, str(value)]
        return out

    def data(self) -> None:
        a = self.a
        cmd = ["bash", os.path.join(REPO, "scripts", "quickstart.sh"), "--data-only",
               "--run-dir", os.path.join(self.run, "qs"), "--python", a.python,
               "--vocab-size", a.vocab_size, "--max-positions", a.max_positions,
               "--max-train-pairs", a.max_train_pairs, "--valid-size", a.valid_size,
               "--seed", a.seed]  # fmt: skip
        self.stage("data", cmd)

    def pretrain(self) -> None:
        """The quickstart's pre-training (``ca_mlm``) to the largest budget, a checkpoint
        at every budget (all kept), no validation."""
        from veco_plugin.pretraining_command import PretrainingCommand

        a, top = self.a, self.budgets[-1]
        positive = [b for b in self.budgets if b > 0]
        interval = math.gcd(*positive)
        cmd = PretrainingCommand(
            data=os.path.join(self.run, "qs", "data"),
            save_dir=os.path.join(self.run, "pretrain"),
            criterion="ca_mlm",
            updates=top,
            warmup=a.pretrain_warmup,
            max_tokens=a.pretrain_max_tokens,
            max_positions=a.max_positions,
            lr=a.pretrain_lr,
            user_dir=USER_DIR,
            arch=f"veco_{a.arch}",
            size=tuple(self.size_flags()),
            device=tuple(self.device()),
            save_every=interval,
            keep_last=-1,
            validate="never",
            seed=a.seed,
        ).command(os.path.join(self.bin, "fairseq-train"))
        self.stage("pretrain", cmd)

    def pretrained(self, budget: int) -> str:
        directory = os.path.join(self.run, "pretrain")
        found = [f for f in os.listdir(directory) if f.endswith(f"_{budget}.pt")]
        if len(found) != 1:
            raise SweepError(f"{directory}: no single checkpoint_*_{budget}.pt ({found})")
        return os.path.join(directory, found[0])

    def init(self, budget: int, spec: str, bias: bool) -> str:
        name = f"init-{budget}-{spec.replace(':', '')}{'-bias' if bias else ''}"
        out = os.path.join(self.run, name, "init.pt")
        dictionary = os.path.join(self.run, "qs", "data", "dict.txt")
        cmd = [os.path.join(self.bin, "veco-init-nmt"), "--pretrained", self.pretrained(budget),
               "--output", out, "--decoder-layers", spec, "--dict", dictionary,
               "--seed", self.a.seed]  # fmt: skip
        if bias:
            cmd.append("--keep-output-bias")
        self.stage(name, cmd)
        return out

    def finetune(self, name: str, decoder_layers: int, init: Optional[str], inputs: str,
                 bias: bool, lr: str) -> List[Dict]:  # fmt: skip
        a = self.a
        arch = f"veco_transformer_{a.arch}" if not self.size_flags() else "veco_transformer"
        if arch == "veco_transformer":  # every size explicit, as veco-init-nmt prints them
            layers, dim, ffn, heads = _arch_sizes(a)
            sizes = ["--encoder-layers", layers, "--encoder-embed-dim", dim,
                     "--encoder-ffn-embed-dim", ffn,
                     "--encoder-attention-heads", heads]  # fmt: skip
        else:
            sizes = []
        cmd = [os.path.join(self.bin, "fairseq-train"), os.path.join(self.run, "qs", "nmt-bin"),
               "--user-dir", USER_DIR, "--task", "translation_from_pretrained_veco",
               "-s", "en", "-t", "de", "--input-format", inputs, "--arch", arch, *sizes,
               "--decoder-layers", decoder_layers,
               "--max-source-positions", a.max_positions,
               "--max-target-positions", a.max_positions, *self.device(),
               "--dropout", a.dropout,
               "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
               "--optimizer", "adam", "--adam-betas", "(0.9,0.98)", "--adam-eps", "1e-6",
               "--clip-norm", "1.0", "--lr", lr, "--lr-scheduler", "inverse_sqrt",
               "--warmup-updates", a.finetune_warmup, "--max-tokens", a.max_tokens,
               "--max-update", a.finetune_updates,
               "--save-dir", os.path.join(self.run, name, "checkpoints"),
               "--no-save", "--validate-interval-updates", a.eval_interval,
               "--validate-interval", 1000000, "--eval-bleu",
               "--eval-bleu-remove-bpe", "sentencepiece",
               "--eval-bleu-args", '{"beam": 1, "max_len_a": 1.2, "max_len_b": 10}',
               "--log-format", "json", "--log-interval", 50, "--seed", a.seed,
               "--num-workers", 0]  # fmt: skip
        if init:
            cmd += ["--finetune-from-model", init]
        if bias:
            cmd.append("--decoder-output-bias")
        return read_curve(self.stage(name, cmd))

    # --- the sweep ----------------------------------------------------------------------

    def plan(self):
        """(name, budget, decoder spec, decoder layers, inputs, bias, lr) of every run."""
        a, top, n = self.a, self.budgets[-1], self.last_n
        runs = [(f"ft-{b}", b, "all", self.layers, "veco", False, a.finetune_lr)
                for b in self.budgets]  # fmt: skip
        variants = self.variants
        if "last" in variants:
            runs += [
                (f"ft-{b}-last{n}", b, f"last:{n}", n, "veco", False, a.finetune_lr)
                for b in (0, top)
            ]
        if "inputs" in variants:
            runs += [(f"ft-{b}-fairseq-inputs", b, "all", self.layers, "fairseq", False,
                      a.finetune_lr) for b in (0, top)]  # fmt: skip
        if "bias" in variants:
            runs += [(f"ft-{top}-lm-bias", top, "all", self.layers, "veco", True, a.finetune_lr)]
        if "lr" in variants:
            for lr in filter(None, a.lr_variants.split(",")):
                runs += [(f"ft-{b}-lr{lr}", b, "all", self.layers, "veco", False, lr)
                         for b in (0, top)]  # fmt: skip
        if 0 not in self.budgets:
            runs.insert(0, ("ft-0", 0, "all", self.layers, "veco", False, a.finetune_lr))
        return runs

    def run_all(self) -> Dict[str, List[Dict]]:
        self.data()
        runs, curves = self.plan(), {}
        with futures.ThreadPoolExecutor(max_workers=self.a.jobs) as pool:

            def job(name, budget, spec, layers, inputs, bias, lr):
                init = self.init(budget, spec, bias) if budget else None
                curves[name] = self.finetune(name, layers, init, inputs, bias, lr)

            # the pre-training takes one lane; random-init runs fill the others meanwhile
            pending = [pool.submit(self.pretrain)]
            pending += [pool.submit(job, *r) for r in runs if r[1] == 0]
            pending[0].result()
            pending += [pool.submit(job, *r) for r in runs if r[1] > 0]
            for p in pending:
                p.result()
        return curves

    def baseline(self, name: str) -> str:
        """The random-init twin of a run: same decoder, inputs and lr."""
        for suffix in ("-lm-bias",):
            name = name.replace(suffix, "")
        return "ft-0" + name[name.index("-", 3) :] if name.count("-") > 1 else "ft-0"


def read_curve(log: str) -> List[Dict]:
    """Valid loss and BLEU per update of a fine-tuning log (the quickstart report's reader;
    imported here so that a bad flag fails before fairseq loads)."""
    from veco_plugin.quickstart.report import learning_curve

    return learning_curve(log)


def _arch_sizes(a):
    from argparse import Namespace

    from fairseq.models import ARCH_CONFIG_REGISTRY

    import veco_plugin  # noqa: F401  (registers the archs)

    ns = Namespace()
    ARCH_CONFIG_REGISTRY[f"veco_transformer_{a.arch}"](ns)
    return (a.layers or ns.encoder_layers, a.dim or ns.encoder_embed_dim,
            a.ffn or ns.encoder_ffn_embed_dim, a.heads or ns.encoder_attention_heads)  # fmt: skip


def differences(curves: Dict[str, List[Dict]], sweep: Sweep) -> Dict[str, List[Dict]]:
    """Per VECO run and fine-tuning update: BLEU and loss minus its random-init twin."""
    out = {}
    for name, curve in curves.items():
        if name.startswith("ft-0"):
            continue
        base = {p["update"]: p for p in curves[sweep.baseline(name)]}
        out[name] = [
            {
                "update": p["update"],
                "bleu": p["valid_bleu"],
                "loss": p["valid_loss"],
                "d_bleu": p["valid_bleu"] - base[p["update"]]["valid_bleu"],
                "d_loss": p["valid_loss"] - base[p["update"]]["valid_loss"],
            }
            for p in curve
            if p["update"] in base
        ]
    return out


def table(diffs: Dict[str, List[Dict]], sweep: Sweep, curves: Dict[str, List[Dict]]) -> str:
    names = sorted(diffs, key=lambda n: (int(n.split("-")[1]), n))
    updates = [p["update"] for p in diffs[names[0]]]
    head = "| run (vs its random twin) | " + " | ".join(f"{u}" for u in updates) + " |"
    lines = [
        "Valid BLEU (greedy) difference, VECO init minus random init, per fine-tuning update:",
        "",
        head,
        "|---|" + "---:|" * len(updates),
    ]
    for n in names:
        lines.append(f"| {n} (vs {sweep.baseline(n)}) | "
                     + " | ".join(f"{p['d_bleu']:+.2f}" for p in diffs[n]) + " |")  # fmt: skip
    lines += ["", "Valid loss difference (bits, label-smoothed; negative = VECO better):", "",
              head, "|---|" + "---:|" * len(updates)]  # fmt: skip
    for n in names:
        lines.append(f"| {n} | " + " | ".join(f"{p['d_loss']:+.3f}" for p in diffs[n]) + " |")
    lines += ["", "Random-init runs (absolute valid BLEU / loss):", "", head,
              "|---|" + "---:|" * len(updates)]  # fmt: skip
    for n in sorted(k for k in curves if k.startswith("ft-0")):
        cells = [f"{p['valid_bleu']:.2f} / {p['valid_loss']:.3f}" for p in curves[n]]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    a = parse_args(argv)
    try:
        sweep = Sweep(a)
        curves = sweep.run_all()
        diffs = differences(curves, sweep)
    except SweepError as exc:
        sys.exit(f"init_sweep.py: error: {exc}")
    text = table(diffs, sweep, curves)
    os.makedirs(sweep.run, exist_ok=True)
    with open(os.path.join(sweep.run, "sweep.json"), "w", encoding="utf-8") as f:
        json.dump({"args": vars(a), "curves": curves, "differences": diffs}, f, indent=1)
    with open(os.path.join(sweep.run, "sweep.md"), "w", encoding="utf-8") as f:
        f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
