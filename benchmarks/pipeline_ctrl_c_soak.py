#!/usr/bin/env python
"""Ctrl-C at random moments of a pipeline command (``veco-xtreme``): does every stop end in
one line, with no traceback, and does the same command then resume and finish?

The README's toy job (``scripts/prepare-pretraining-data.sh`` on ``tests/fixtures/text``, 5
``ca_mlm`` updates of ``veco_tiny``), then its ``veco-xtreme --task udpos`` block with the
random-initialization row, started as a user starts it (the installed command, a session of
its own), ``--stops`` times in one ``--out``: each run gets SIGINT on its whole process group
(as a terminal's Ctrl-C) at a uniformly random time between ``--earliest`` and ``--latest``
seconds after its start (in the imports, a stage's command, a stage's body, between stages).
Printed (Markdown): per stop the delay, the seconds from the signal to the exit, the exit
status, the console's last line, whether a traceback was printed and the stages finished so
far (each run's output: ``OUT/stopN.log``); then one more run of the same command, which
must end with status 0, skip every stage finished before and write the table.

    python benchmarks/pipeline_ctrl_c_soak.py [--stops 12] [--seed 0] [--out /tmp/soak-xtreme]
"""

import glob
import os
import random
import signal
import subprocess
import sys

from common import interrupted_after, soak_args, stop_row

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
FIX = os.path.join(REPO, "tests", "fixtures")
LINES = (  # the pipeline's line; the plugin's, when the signal comes before the pipeline runs
    "== interrupted: stopping the running stages (re-run to resume)",
    "veco-xtreme: interrupted; resume with the same command",
)


def toy_checkpoint(out: str) -> str:
    """The README's toy pre-training (5 updates): its checkpoint."""
    data, save = os.path.join(out, "data"), os.path.join(out, "pre")
    checkpoint = os.path.join(save, "checkpoint_last.pt")
    if os.path.isfile(checkpoint):
        return checkpoint
    subprocess.run(
        ["bash", os.path.join(REPO, "scripts/prepare-pretraining-data.sh"), "--text",
         os.path.join(FIX, "text"), "--out", data, "--vocab-size", "300"],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    subprocess.run(
        [os.path.join(BIN, "fairseq-train"), data, "--user-dir", os.path.join(REPO, "veco_plugin"),
         "--task", "veco_pretraining", "--mono-langs", "en,de", "--bi-pairs", "en-de",
         "--arch", "veco_tiny", "--criterion", "ca_mlm", "--optimizer", "adam", "--lr", "1e-3",
         "--max-tokens", "600", "--max-mono-positions", "32", "--max-bi-positions", "32",
         "--max-update", "5", "--cpu", "--seed", "1", "--save-dir", save,
         "--no-epoch-checkpoints", "--disable-validation", "--num-workers", "0"],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    return checkpoint


def xtreme_args(out: str, checkpoint: str):
    data = os.path.dirname(os.path.dirname(checkpoint))
    return [
        "--task", "udpos", "--checkpoint", f"toy={checkpoint}", "--random-baseline",
        "--spm-model", os.path.join(data, "data", "spm.model"),
        "--dict", os.path.join(data, "data", "dict.txt"),
        "--train", os.path.join(FIX, "udpos", "train-en.excerpt.tsv"),
        "--dev", os.path.join(FIX, "udpos", "dev-en.excerpt.tsv"),
        "--test", "de=" + os.path.join(FIX, "udpos", "de_gsd-ud-test.excerpt.conllu"),
        "--epochs", "1", "--max-length", "32", "--out", os.path.join(out, "udpos"),
    ]  # fmt: skip


def finished(out: str):
    return sorted(
        os.path.basename(p)[: -len(".done")]
        for p in glob.glob(os.path.join(out, "udpos", "stamps", "*.done"))
    )


def stop_once(argv, delay: float, log: str):
    with open(log, "w", encoding="utf-8") as f:
        status, took, _ = interrupted_after(argv, delay, f, subprocess.STDOUT)
    with open(log, encoding="utf-8", errors="replace") as f:
        return stop_row(delay, took, status, f.read())


def main() -> int:
    a = soak_args(__doc__.split("\n")[0], 12, 0.3, 25.0, "/tmp/soak-xtreme")
    os.makedirs(a.out, exist_ok=True)
    argv = [os.path.join(BIN, "veco-xtreme"), *xtreme_args(a.out, toy_checkpoint(a.out))]
    rng = random.Random(a.seed)
    rows = []
    print("| # | SIGINT after (s) | exit after (s) | status | traceback | stages finished | "
          "last line |")  # fmt: skip
    print("|---:|---:|---:|---:|---|---:|---|")
    for i in range(a.stops):
        row = stop_once(argv, rng.uniform(a.earliest, a.latest), f"{a.out}/stop{i + 1}.log")
        rows.append(row)
        print(f"| {i + 1} | {row['delay']:.1f} | {row['exit_s']:.2f} | {row['status']} | "
              f"{row['traceback']} | {len(finished(a.out))} | `{row['last']}` |",
              flush=True)  # fmt: skip
    before = finished(a.out)
    done = subprocess.run(argv, capture_output=True, text=True)
    skipped = [s for s in before if f"== [{s}] finished earlier: skipped" in done.stdout]
    table = os.path.isfile(os.path.join(a.out, "udpos", "results.md"))
    # a stop after the run had written its table (status 0, or SIGINT while the interpreter
    # ended) leaves that line last
    stopped = (130, -signal.SIGINT)
    ok = [
        (r["status"] in stopped and r["last"] in LINES
         or r["status"] in (0, -signal.SIGINT) and r["last"].startswith("== written: "))
        and not r["traceback"]
        for r in rows
    ]  # fmt: skip
    print(f"\nstops ending in one line, no traceback: {sum(ok)} of {len(rows)}; longest "
          f"signal-to-exit: {max(r['exit_s'] for r in rows):.2f} s; the same command then "
          f"exited {done.returncode}, skipped {len(skipped)} of the {len(before)} stages "
          f"finished before, table written: {table}")  # fmt: skip
    return 0 if all(ok) and done.returncode == 0 and skipped == before and table else 1


if __name__ == "__main__":
    sys.exit(main())
