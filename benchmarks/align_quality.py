#!/usr/bin/env python
"""Word-alignment quality of ``veco-align`` before and after XLM-Align's ``dwa`` training,
and what a ``dwa`` update costs.

AER (Och & Ney 2003; ``veco_plugin.evaluation.aer``) on held-out real En-De pairs, with
a statistical aligner as the reference:

* corpus: ``veco-gettext-corpus`` (train / valid / test split by catalog), every side
  Moses-tokenized (``sacremoses``, no escaping) so that words are whitespace tokens;
* reference ("gold"): ``eflomal`` (PyPI ``eflomal``, IBM model 3 with Bayesian priors,
  its defaults) run over the FULL corpus (train + valid + test pairs, tens of thousands),
  both directions; **sure links = intersection** of the forward and reverse links,
  **possible links = union** (Pharaoh ``i-j`` and ``ipj``). Scored on the first
  ``--eval-pairs`` test pairs: the test catalogs are never seen by the neural models;
* models: a ``veco`` encoder pre-trained from scratch on the train split with
  ``fairseq-train --criterion ca_mlm`` for ``--cold-updates`` (XLM-Align's cold start),
  then continued from that checkpoint (``--restore-file COLD --reset-optimizer
  --reset-dataloader --reset-meters --reset-lr-scheduler``) for ``--dwa-updates`` with
  ``--criterion dwa``; the same continuation with ``ca_mlm`` (``--control-updates``) tells
  DWA's effect from that of more updates;
* aligner: ``veco_plugin.alignment.aligner.align_pairs`` (what ``veco-align`` runs) with
  each ``--methods`` at the default layer; a diagonal aligner (word i -> word i * m / n)
  is the floor.

Costs, in-process on the same real batches (``task.get_batch_iterator`` of the ``dwa`` run),
forward + backward + Adam step, interleaved rounds, medians:

* labelling share: time spent in ``self_label`` (Sinkhorn + iterative filtering, §3.1,
  eqs. 1-9) inside a real ``dwa`` update, divided by that update's time (target <= 2%);
  reported apart: the share of the no-grad forward of the unmasked pair that produces the
  hidden states being labelled (``VecoModel._self_label``);
* ``dwa`` seconds per update vs ``tlm`` on the same batches (same encoder weights).

    python benchmarks/align_quality.py [--json PATH] [--data DIR] [--corpus DIR] \\
        [--cold-updates 600 --dwa-updates 300] [--layers 4 --dim 128 --ffn 512 --heads 4]

Every stage's output stays in ``--workdir`` (default: a new temp dir, printed); re-running
with the same ``--workdir`` reuses what is there (corpus, data, gold, checkpoints).
eflomal is a benchmark extra: ``pip install -r benchmarks/requirements-align.txt``.
"""

import argparse
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from argparse import Namespace
from typing import Dict, List, Optional, Sequence, Set, Tuple

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from align_speed import BIN, REPO, USER_DIR, gettext_corpus  # noqa: E402
from common import encoder_size_flags, write_json  # noqa: E402

RESET = ["--reset-optimizer", "--reset-dataloader", "--reset-meters", "--reset-lr-scheduler"]
Link = Tuple[int, int]


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--json", help="write the results (AER, costs, settings) here")
    p.add_argument("--workdir", help="stage outputs (default: a new temp dir, kept)")
    p.add_argument("--corpus", help="a veco-gettext-corpus output dir (default: built)")
    p.add_argument(
        "--data",
        help="a DATA dir of scripts/prepare-pretraining-data.sh built from --corpus's train "
        "split (default: built into the work dir)",
    )
    p.add_argument("--vocab", type=int, default=4000, help="sentencepiece pieces (no --data)")
    g = p.add_argument_group("model (veco_tiny with these sizes)")
    g.add_argument("--layers", type=int, default=4)
    g.add_argument("--dim", type=int, default=128)
    g.add_argument("--ffn", type=int, default=512)
    g.add_argument("--heads", type=int, default=4)
    g = p.add_argument_group("training budgets")
    g.add_argument("--cold-updates", type=int, default=600, help="ca_mlm from scratch")
    g.add_argument("--dwa-updates", type=int, default=300, help="dwa from the cold start")
    g.add_argument(
        "--control-updates",
        type=int,
        default=None,
        help="ca_mlm from the cold start, same resets (default: --dwa-updates; 0: skip)",
    )
    g.add_argument("--lr", type=float, default=2e-3, help="peak lr of the cold start")
    g.add_argument("--continue-lr", type=float, default=1e-3, help="peak lr of dwa / control")
    g.add_argument("--max-tokens", type=int, default=2048)
    g.add_argument(
        "--max-positions", type=int, default=128, help="mono positions; a bi side gets half"
    )
    g.add_argument("--jobs", type=int, default=2, help="dwa and control side by side")
    g.add_argument("--threads", type=int, default=1, help="threads per training / timing")
    g = p.add_argument_group("evaluation")
    g.add_argument("--eval-pairs", type=int, default=300, help="held-out test pairs scored")
    g.add_argument("--max-words", type=int, default=60, help="skip longer held-out pairs")
    g.add_argument("--methods", default="ot,argmax,itermax", help="veco-align methods")
    g.add_argument("--align-layer", type=int, default=None, help="default: veco-align's")
    g = p.add_argument_group("cost measurement")
    g.add_argument("--timing-batches", type=int, default=6, help="real batches per round")
    g.add_argument("--timing-rounds", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args(argv)


def env(threads: int) -> Dict[str, str]:
    e = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    e["PATH"] = BIN + os.pathsep + e.get("PATH", "")
    return e


class Stages:
    """Wall time of each stage, printed as it ends."""

    def __init__(self):
        self.seconds: Dict[str, float] = {}

    def run(self, name: str, fn, *args, **kw):
        start = time.perf_counter()
        print(f"== {name} ...", flush=True)
        out = fn(*args, **kw)
        self.seconds[name] = time.perf_counter() - start
        print(f"== {name}: {self.seconds[name]:.0f} s", flush=True)
        return out


# --- corpus, reference alignments -------------------------------------------------------


def build_data(a, corpus: str, out: str) -> str:
    if not os.path.isfile(os.path.join(out, "bi", "en-de", "train.en-de.en.bin")):
        cmd = [
            "bash",
            os.path.join(REPO, "scripts", "prepare-pretraining-data.sh"),
            "--text",
            corpus,
            "--out",
            out,
            "--vocab-size",
            str(a.vocab),
        ]
        print("   " + " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, env=dict(env(2), PYTHON=sys.executable))
    return out


def tokenized_corpus(corpus: str, out: str) -> Dict[str, List[Tuple[str, str]]]:
    """Moses-tokenized pairs of every split (cached in ``out/<split>.tok.{en,de}``)."""
    from sacremoses import MosesTokenizer

    pairs = {}
    for split in ("train", "valid", "test"):
        paths = [os.path.join(out, f"{split}.tok.{lang}") for lang in ("en", "de")]
        if not all(os.path.isfile(p) for p in paths):
            for lang, path in zip(("en", "de"), paths):
                tok = MosesTokenizer(lang=lang)
                with open(os.path.join(corpus, f"{split}.{lang}"), encoding="utf-8") as f:
                    lines = [tok.tokenize(s.strip(), escape=False, return_str=True) for s in f]
                with open(path + ".part", "w", encoding="utf-8") as f:
                    f.writelines(" ".join(s.split()) + "\n" for s in lines)
                os.replace(path + ".part", path)
        sides = [read_text(p) for p in paths]
        pairs[split] = list(zip(*sides))
    return pairs


def read_text(path: str) -> List[str]:
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def read_links(path: str) -> List[Set[Link]]:
    with open(path, encoding="utf-8") as f:
        return [{(int(i), int(j)) for i, j in (t.split("-") for t in line.split())} for line in f]


def eflomal_reference(pairs: Dict[str, List[Tuple[str, str]]], out: str) -> Tuple[str, str]:
    """Run eflomal on every pair; return its forward and reverse link files (``i-j``)."""
    try:
        import eflomal
    except ImportError as exc:
        raise SystemExit(
            f"eflomal is not installed ({exc}): pip install -r benchmarks/requirements-align.txt"
        )

    fwd, rev = os.path.join(out, "eflomal.fwd"), os.path.join(out, "eflomal.rev")
    if not (os.path.isfile(fwd) and os.path.isfile(rev)):
        everything = [p for split in ("train", "valid", "test") for p in pairs[split]]
        aligner = eflomal.Aligner()  # model 3, 3 samplers, iterations from the corpus size
        aligner.align(
            [s for s, _ in everything],
            [t for _, t in everything],
            links_filename_fwd=fwd + ".part",
            links_filename_rev=rev + ".part",
            quiet=True,
        )
        os.replace(fwd + ".part", fwd)
        os.replace(rev + ".part", rev)
    return fwd, rev


def held_out(
    a, pairs: Dict[str, List[Tuple[str, str]]], fwd: str, rev: str, out: str
) -> Dict[str, object]:
    """The scored pairs (first ``--eval-pairs`` test pairs within ``--max-words``) and their
    gold file: sure = fwd n rev, possible = fwd u rev."""
    offset = len(pairs["train"]) + len(pairs["valid"])  # test pairs come last in eflomal's run
    fwd_links, rev_links = read_links(fwd), read_links(rev)
    chosen = [
        k
        for k, (s, t) in enumerate(pairs["test"])
        if 0 < len(s.split()) <= a.max_words and 0 < len(t.split()) <= a.max_words
    ][: a.eval_pairs]
    paths = {name: os.path.join(out, f"heldout.{name}") for name in ("en", "de", "gold")}
    sure_total = possible_total = 0
    with open(paths["en"], "w", encoding="utf-8") as fs, open(
        paths["de"], "w", encoding="utf-8"
    ) as ft, open(paths["gold"], "w", encoding="utf-8") as fg:
        for k in chosen:
            s, t = pairs["test"][k]
            f, r = fwd_links[offset + k], rev_links[offset + k]
            sure, possible = f & r, (f | r) - (f & r)
            sure_total += len(sure)
            possible_total += len(sure) + len(possible)
            fs.write(s + "\n")
            ft.write(t + "\n")
            links = [f"{i}-{j}" for i, j in sorted(sure)] + [
                f"{i}p{j}" for i, j in sorted(possible)
            ]
            fg.write(" ".join(links) + "\n")
    agreement = sum(len(fwd_links[i] & rev_links[i]) for i in range(len(fwd_links))) / max(
        1, sum(len(fwd_links[i] | rev_links[i]) for i in range(len(fwd_links)))
    )
    return {
        "paths": paths,
        "pairs": len(chosen),
        "sure": sure_total,
        "possible": possible_total,
        "fwd_rev_agreement": agreement,
    }


# --- training ---------------------------------------------------------------------------


def train_args(a, data: str, save: str, criterion: str, updates: int, lr: float) -> List[str]:
    """The toy pre-training at the benchmark's size, without gradient clipping or
    validation, warming up for a fifth of its updates."""
    from veco_plugin.pretraining_command import PretrainingCommand

    return PretrainingCommand(
        data=data,
        save_dir=save,
        criterion=criterion,
        updates=updates,
        warmup=max(1, updates // 5),
        max_tokens=a.max_tokens,
        max_positions=a.max_positions,
        lr=str(lr),
        user_dir=USER_DIR,
        size=tuple(encoder_size_flags(a)),
        adam_eps=None,
        clip_norm=None,
        validate="never",
        log_interval=25,
        seed=a.seed,
    ).args()


def start_training(a, name: str, args: List[str], work: str) -> Optional[subprocess.Popen]:
    """Launch ``fairseq-train args`` (log: ``work/logs/name.log``) unless its checkpoint is
    already there; returns the process or None."""
    save = args[args.index("--save-dir") + 1]
    if os.path.isfile(os.path.join(save, "checkpoint_last.pt")):
        print(f"   {name}: reusing {save}/checkpoint_last.pt", flush=True)
        return None
    os.makedirs(os.path.join(work, "logs"), exist_ok=True)
    print(f"   {name}: fairseq-train {' '.join(args)}", flush=True)
    log = open(os.path.join(work, "logs", f"{name}.log"), "w")
    return subprocess.Popen(
        [os.path.join(BIN, "fairseq-train"), *args],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env(a.threads),
    )


def wait(procs: Dict[str, Optional[subprocess.Popen]], work: str) -> None:
    for name, proc in procs.items():
        if proc is not None and proc.wait() != 0:
            tail = "\n".join(read_text(os.path.join(work, "logs", f"{name}.log"))[-40:])
            raise SystemExit(f"fairseq-train ({name}) failed:\n{tail}")


def last_train_record(work: str, name: str) -> Dict[str, float]:
    from veco_plugin.fairseq_logs import json_records

    path = os.path.join(work, "logs", f"{name}.log")
    if not os.path.isfile(path):
        return {}
    records = json_records(read_text(path), "train")
    return records[-1] if records else {}


# --- alignment and AER ------------------------------------------------------------------


def diagonal(src: Sequence[str], tgt: Sequence[str]) -> List[str]:
    lines = []
    for s, t in zip(src, tgt):
        n, m = len(s.split()), len(t.split())
        lines.append(" ".join(f"{i}-{min(m - 1, (2 * i + 1) * m // (2 * n))}" for i in range(n)))
    return lines


def score(gold: Dict[str, object], lines: List[str], pred_path: str) -> Dict[str, float]:
    from veco_plugin.evaluation.aer import aer_scores, evaluate_files

    with open(pred_path, "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)
    paths = gold["paths"]
    counts = evaluate_files(paths["gold"], pred_path, "pharaoh", False, paths["en"], paths["de"])
    s = aer_scores(counts)
    return {
        "aer": 100 * float(s.aer),
        "precision": 100 * float(s.precision),
        "recall": 100 * float(s.recall),
        "f1": 100 * float(s.f1),
        "links_per_pair": counts.predicted / max(1, counts.sentences),
    }


def evaluate(
    a, checkpoints: Dict[str, str], data: str, gold: Dict[str, object], work: str
) -> Dict[str, Dict[str, Dict[str, float]]]:
    from veco_plugin.alignment.aligner import align_pairs, word_pieces
    from veco_plugin.checkpoints.encoder import load_encoder

    src, tgt = read_text(gold["paths"]["en"]), read_text(gold["paths"]["de"])
    pieces = word_pieces(spm_model=os.path.join(data, "spm.model"))
    results = {"diagonal": {"-": score(gold, diagonal(src, tgt), os.path.join(work, "pred.diag"))}}
    for name, ckpt in checkpoints.items():
        model, dictionary = load_encoder(ckpt, os.path.join(data, "dict.txt"))
        results[name] = {}
        for method in a.methods.split(","):
            lines = align_pairs(
                model, dictionary, pieces, src, tgt, layer=a.align_layer, method=method
            )
            pred = os.path.join(work, f"pred.{name}.{method}")
            results[name][method] = score(gold, lines, pred)
    return results


# --- costs of a dwa update --------------------------------------------------------------


def measure_costs(a, data: str, cold: str, work: str) -> Dict[str, object]:
    """Labelling share of a real dwa update and dwa / tlm seconds per update."""
    from fairseq import checkpoint_utils, options, tasks, utils
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    import veco_plugin.criterions.dwa as dwa_module

    torch.set_num_threads(a.threads)
    state = checkpoint_utils.load_checkpoint_to_cpu(cold)["model"]

    def build(criterion: str):
        parsed = options.parse_args_and_arch(
            options.get_training_parser(),
            train_args(a, data, os.path.join(work, "unused"), criterion, 1, a.continue_lr),
        )
        parsed.tpu = False
        cfg = convert_namespace_to_omegaconf(parsed)
        task = tasks.setup_task(cfg.task)
        model = task.build_model(cfg.model)
        model.load_state_dict(dict(state), strict=True, model_cfg=cfg.model)
        return cfg, task, model, task.build_criterion(cfg.criterion)

    torch.manual_seed(a.seed)
    cfg, task, dwa_model, dwa_crit = build("dwa")
    _, _, tlm_model, tlm_crit = build("tlm")
    task.load_dataset(cfg.dataset.train_subset)
    itr = task.get_batch_iterator(
        dataset=task.dataset(cfg.dataset.train_subset),
        max_tokens=cfg.dataset.max_tokens,
        max_sentences=cfg.dataset.batch_size,
        max_positions=utils.resolve_max_positions(task.max_positions(), dwa_model.max_positions()),
        ignore_invalid_inputs=True,
        required_batch_size_multiple=cfg.dataset.required_batch_size_multiple,
        seed=cfg.common.seed,
        num_workers=0,
        epoch=1,
    ).next_epoch_itr(shuffle=True)
    batches = [next(itr) for _ in range(a.timing_batches)]

    label_seconds: List[float] = []
    real_self_label = dwa_module.self_label

    def timed_self_label(*args, **kw):
        start = time.perf_counter()
        out = real_self_label(*args, **kw)
        label_seconds.append(time.perf_counter() - start)
        return out

    opts = {id(m): torch.optim.Adam(m.parameters(), lr=1e-5) for m in (dwa_model, tlm_model)}

    def update(model, criterion, sample) -> float:
        model.train()
        start = time.perf_counter()
        opts[id(model)].zero_grad(set_to_none=True)
        loss, _, _ = criterion(model, sample)
        loss.backward()
        opts[id(model)].step()
        return time.perf_counter() - start

    forward_seconds: List[float] = []
    real_forward = dwa_model._self_label

    def timed_forward(*args, **kw):
        start = time.perf_counter()
        out = real_forward(*args, **kw)
        forward_seconds.append(time.perf_counter() - start)
        return out

    dwa_module.self_label = timed_self_label
    dwa_model._self_label = timed_forward  # VecoModel._serve dispatches by getattr
    try:
        for sample in batches[:2]:  # warm-up
            update(dwa_model, dwa_crit, sample)
            update(tlm_model, tlm_crit, sample)
        rounds: Dict[str, List[float]] = {k: [] for k in ("dwa", "tlm", "label", "forward")}
        for _ in range(a.timing_rounds):
            totals = dict.fromkeys(rounds, 0.0)
            for sample in batches:
                del label_seconds[:], forward_seconds[:]
                totals["dwa"] += update(dwa_model, dwa_crit, sample)
                totals["label"] += sum(label_seconds)
                totals["forward"] += sum(forward_seconds)
                totals["tlm"] += update(tlm_model, tlm_crit, sample)
            for k, v in totals.items():
                rounds[k].append(v / len(batches))
    finally:
        dwa_module.self_label = real_self_label
        del dwa_model._self_label
    bi = [s["bi"]["concat_tokens"].shape for s in batches if "bi" in s]
    return {
        "dwa_seconds_per_update": statistics.median(rounds["dwa"]),
        "tlm_seconds_per_update": statistics.median(rounds["tlm"]),
        "dwa_time_ratio": statistics.median(d / t for d, t in zip(rounds["dwa"], rounds["tlm"])),
        "selflabel_seconds_per_update": statistics.median(rounds["label"]),
        "dwa_selflabel_share": statistics.median(
            x / d for x, d in zip(rounds["label"], rounds["dwa"])
        ),
        "label_forward_seconds_per_update": statistics.median(rounds["forward"]),
        "label_forward_share": statistics.median(
            x / d for x, d in zip(rounds["forward"], rounds["dwa"])
        ),
        "bi_batch_shapes": [list(s) for s in bi],
    }


# --- main -------------------------------------------------------------------------------


def main(argv=None):
    a = parse_args(argv)
    if a.control_updates is None:
        a.control_updates = a.dwa_updates
    wall = time.perf_counter()
    logging.basicConfig(level=logging.WARNING, force=True)
    from fairseq import utils

    utils.import_user_module(Namespace(user_dir=USER_DIR))
    work = os.path.abspath(a.workdir or tempfile.mkdtemp(prefix="align-quality-"))
    os.makedirs(work, exist_ok=True)
    print(f"work dir: {work}", flush=True)
    st = Stages()
    corpus = a.corpus or st.run("corpus", gettext_corpus, os.path.join(work, "corpus"))
    data = a.data or st.run("data", build_data, a, corpus, os.path.join(work, "data"))
    pairs = st.run("moses tokenization", tokenized_corpus, corpus, work)
    fwd, rev = st.run("eflomal (reference)", eflomal_reference, pairs, work)
    gold = held_out(a, pairs, fwd, rev, work)

    ckpt = {"cold": os.path.join(work, "cold", "checkpoint_last.pt")}
    cold_args = train_args(a, data, os.path.dirname(ckpt["cold"]), "ca_mlm", a.cold_updates, a.lr)
    st.run(
        "cold start (ca_mlm)",
        lambda: wait({"cold": start_training(a, "cold", cold_args, work)}, work),
    )

    runs = {"dwa": ("dwa", a.dwa_updates), "control": ("ca_mlm", a.control_updates)}
    runs = {k: v for k, v in runs.items() if v[1] > 0}

    def continuations():
        procs: Dict[str, Optional[subprocess.Popen]] = {}
        for name, (criterion, updates) in runs.items():
            save = os.path.join(work, name)
            ckpt[name] = os.path.join(save, "checkpoint_last.pt")
            args = train_args(a, data, save, criterion, updates, a.continue_lr)
            args += ["--restore-file", ckpt["cold"], *RESET]
            procs[name] = start_training(a, name, args, work)
            if a.jobs < 2:
                wait({name: procs.pop(name)}, work)
        wait(procs, work)

    st.run("dwa + control (from the cold start)", continuations)
    aer = st.run("alignment + AER", evaluate, a, ckpt, data, gold, work)
    costs = st.run("dwa update costs", measure_costs, a, data, ckpt["cold"], work)
    wall = time.perf_counter() - wall

    labels = {
        "cold": f"cold: ca_mlm {a.cold_updates}",
        "dwa": f"cold + dwa {a.dwa_updates}",
        "control": f"cold + ca_mlm {a.control_updates}",
    }
    print(
        f"\nAER vs eflomal (sure = fwd n rev, possible = fwd u rev) on {gold['pairs']} held-out "
        f"gettext pairs ({gold['sure']} sure, {gold['possible']} possible links); veco_tiny "
        f"{a.layers} layers x {a.dim}"
    )
    print(
        f"{'model':<24}{'method':<9}{'AER':>7}{'prec':>7}{'recall':>8}{'F1':>7}{'links/pair':>12}"
    )
    for name, by_method in aer.items():
        for method, s in by_method.items():
            print(
                f"{labels.get(name, name):<24}{method:<9}{s['aer']:>7.2f}{s['precision']:>7.2f}"
                f"{s['recall']:>8.2f}{s['f1']:>7.2f}{s['links_per_pair']:>12.2f}"
            )
    deltas = {
        m: aer["dwa"][m]["aer"] - aer["cold"][m]["aer"]
        for m in aer.get("dwa", {})
        if m in aer["cold"]
    }
    for m, d in deltas.items():
        line = f"dwa - cold AER ({m}): {d:+.2f}"
        if "control" in aer:
            line += f"   dwa - control: {aer['dwa'][m]['aer'] - aer['control'][m]['aer']:+.2f}"
        print(line)
    dwa_log = last_train_record(work, "dwa")
    if dwa_log:
        print(
            "dwa run, last epoch summary: "
            + ", ".join(
                f"{k} {dwa_log[k]}"
                for k in ("bi_dwa_loss", "bi_dwa_acc", "dwa_label_share", "dwa_links_per_pair")
                if k in dwa_log
            )
        )
    print(
        f"\ncosts ({a.timing_batches} real batches of --max-tokens {a.max_tokens}, median of "
        f"{a.timing_rounds} interleaved rounds, {a.threads} thread(s))"
    )
    print(f"  dwa update        {costs['dwa_seconds_per_update']:.3f} s")
    print(f"  tlm update        {costs['tlm_seconds_per_update']:.3f} s")
    print(f"  dwa / tlm         {costs['dwa_time_ratio']:.2f}")
    print(
        f"  self_label (Sinkhorn + filtering) {costs['selflabel_seconds_per_update'] * 1e3:.2f} ms "
        f"= {100 * costs['dwa_selflabel_share']:.2f}% of a dwa update (target <= 2%)"
    )
    print(
        f"  its no-grad forward (unmasked pair)  "
        f"{costs['label_forward_seconds_per_update'] * 1e3:.1f} ms = "
        f"{100 * costs['label_forward_share']:.1f}% of a dwa update"
    )
    print("\nstage wall times: " + ", ".join(f"{k} {v:.0f} s" for k, v in st.seconds.items()))
    print(f"total wall time {wall:.0f} s; work dir {work}")
    result = {
        "aer": aer,
        "dwa_minus_cold_aer": deltas,
        "costs": costs,
        "gold": {k: v for k, v in gold.items() if k != "paths"},
        "gold_definition": "eflomal (defaults) over the full corpus, Moses-tokenized; sure = "
        "forward n reverse links, possible = forward u reverse",
        "dwa_train_summary": dwa_log,
        "stage_seconds": st.seconds,
        "wall_seconds": wall,
        "settings": {
            k: getattr(a, k)
            for k in (
                "layers", "dim", "ffn", "heads", "cold_updates", "dwa_updates",
                "control_updates", "lr", "continue_lr", "max_tokens", "max_positions",
                "eval_pairs", "methods", "align_layer", "threads", "jobs", "seed",
            )
        },  # fmt: skip
        "workdir": work,
    }
    if a.json:
        write_json(a.json, result)
    return result


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
