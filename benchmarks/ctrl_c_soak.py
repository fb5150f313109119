#!/usr/bin/env python
"""Ctrl-C at random moments of ``fairseq-train``: does every stop end in one line, leave
no ``.tmp`` and only complete checkpoints, and resume?

The toy pre-training of the README (``scripts/prepare-pretraining-data.sh`` on
``tests/fixtures/text``; ``veco_tiny``, ``ca_mlm``, a save at every update so that stops
land in saves, validation every 3 updates, 2 DataLoader workers), started as a user
starts it (the installed ``fairseq-train``, a session of its own), ``--stops`` times in
one ``--save-dir``: each run gets SIGINT on its whole process group (as a terminal's
Ctrl-C) at a uniformly random time between ``--earliest`` and ``--latest`` seconds after
its start (some land in the start-up, some in training, validation or a save). Printed
(Markdown): per stop the delay, the seconds from the signal to the exit, the exit status,
the last line, whether a traceback was printed, the ``.tmp`` files left, whether every
checkpoint file is complete, and the update ``checkpoint_last.pt`` holds (each run's stdout and
stderr: ``OUT/stopN.out``, ``OUT/stopN.err``); then one more
run of the same command to ``max + 2`` updates, which must end there (resumable).

    python benchmarks/ctrl_c_soak.py [--stops 20] [--seed 0] [--out /tmp/soak]
"""

import glob
import os
import random
import signal
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from common import interrupted_after, soak_args, stop_row  # noqa: E402

from veco_plugin.checkpoints.atomic import is_complete  # noqa: E402
from veco_plugin.checkpoints.trusted_load import load_trusted  # noqa: E402

BIN = os.path.dirname(sys.executable)
LINE = "fairseq-train: interrupted; resume with the same command"


def train_args(data: str, save: str, updates: int):
    return [
        data, "--user-dir", os.path.join(REPO, "veco_plugin"), "--task", "veco_pretraining",
        "--mono-langs", "en,de", "--bi-pairs", "en-de", "--arch", "veco_tiny",
        "--criterion", "ca_mlm", "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "600",
        "--max-mono-positions", "32", "--max-bi-positions", "32", "--max-update", str(updates),
        "--cpu", "--seed", "1", "--save-dir", save, "--save-interval-updates", "1",
        "--keep-interval-updates", "2", "--validate-interval-updates", "3",
        "--num-workers", "2", "--log-format", "simple", "--log-interval", "1",
    ]  # fmt: skip


def updates_in(path: str) -> int:
    if not os.path.isfile(path):
        return 0
    return load_trusted(path)["optimizer_history"][-1]["num_updates"]


def stop_once(args, save, delay, log):
    with open(log[: -len(".err")] + ".out", "w", encoding="utf-8") as out:
        argv = [os.path.join(BIN, "fairseq-train"), *args]
        status, took, raw = interrupted_after(argv, delay, out, subprocess.PIPE)
    err = raw.decode(errors="replace")
    with open(log, "w", encoding="utf-8") as f:
        f.write(err)
    checkpoints = glob.glob(os.path.join(save, "checkpoint*.pt"))
    return {
        **stop_row(delay, took, status, err),
        "tmp": [os.path.basename(p) for p in glob.glob(os.path.join(save, "*.tmp"))],
        "complete": all(is_complete(p) for p in checkpoints),
        "last_update": updates_in(os.path.join(save, "checkpoint_last.pt")),
        "finishing": "finishing the checkpoint save" in err,
    }


def main() -> int:
    a = soak_args(__doc__.split("\n")[0], 20, 2.0, 14.0, "/tmp/ctrl_c_soak")
    os.makedirs(a.out, exist_ok=True)
    data, save = os.path.join(a.out, "data"), os.path.join(a.out, "ck")
    if not os.path.isfile(os.path.join(data, "dict.txt")):
        subprocess.run(
            ["bash", os.path.join(REPO, "scripts/prepare-pretraining-data.sh"), "--text",
             os.path.join(REPO, "tests/fixtures/text"), "--out", data, "--vocab-size", "300"],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    rng = random.Random(a.seed)
    rows = []
    print("| # | SIGINT after (s) | exit after (s) | status | save finished first | traceback | "
          ".tmp left | all complete | checkpoint_last @ | last line |")  # fmt: skip
    print("|---:|---:|---:|---:|---|---|---|---|---:|---|")
    for i in range(a.stops):
        log = os.path.join(a.out, f"stop{i + 1}.err")
        row = stop_once(
            train_args(data, save, 100000), save, rng.uniform(a.earliest, a.latest), log
        )
        rows.append(row)
        tmp = " ".join(row["tmp"]) or "-"
        print(f"| {i + 1} | {row['delay']:.1f} | {row['exit_s']:.2f} | {row['status']} | "
              f"{row['finishing']} | {row['traceback']} | {tmp} | {row['complete']} | "
              f"{row['last_update']} | `{row['last']}` |", flush=True)  # fmt: skip
    target = max(r["last_update"] for r in rows) + 2
    done = subprocess.run(
        [os.path.join(BIN, "fairseq-train"), *train_args(data, save, target)],
        capture_output=True, env=dict(os.environ, OMP_NUM_THREADS="1"),
    )  # fmt: skip
    resumed = updates_in(os.path.join(save, "checkpoint_last.pt"))
    ok = [
        r["status"] == -signal.SIGINT and r["last"] == LINE and not r["traceback"]
        and not r["tmp"] and r["complete"]
        for r in rows
    ]  # fmt: skip
    print(f"\nstops ending in the one line, no traceback, no .tmp, all complete: {sum(ok)} of "
          f"{len(rows)}; longest signal-to-exit: {max(r['exit_s'] for r in rows):.2f} s; "
          f"the same command then ran to {resumed} updates (asked {target}, exit "
          f"{done.returncode})")  # fmt: skip
    return 0 if all(ok) and resumed == target and done.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
