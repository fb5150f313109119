"""What the benchmark scripts share: model-shape flags, the toy vocabulary, the JSON they
write. (The unit tests build their toy models on the same vocabulary.)"""

import json
import os
from typing import Any, Dict, List


def encoder_size_flags(a: Any) -> List[str]:
    """fairseq flags for an encoder of ``a.layers`` x ``a.dim`` (FFN ``a.ffn``, ``a.heads``)."""
    return [
        "--encoder-layers",
        str(a.layers),
        "--encoder-embed-dim",
        str(a.dim),
        "--encoder-ffn-embed-dim",
        str(a.ffn),
        "--encoder-attention-heads",
        str(a.heads),
    ]


def toy_dictionary(n_words: int = 50) -> Any:
    """fairseq's ``Dictionary`` of the four specials, ``w0`` ... ``w{n_words - 1}`` and
    ``<mask>`` last (the pre-training layout)."""
    from fairseq.data import Dictionary

    d = Dictionary()
    for i in range(n_words):
        d.add_symbol(f"w{i}")
    d.add_symbol("<mask>")
    return d


def write_json(path: str, result: Dict[str, Any]) -> None:
    """``result`` as indented, key-sorted JSON at ``path`` (folders made as needed)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)


def soak_args(description: str, stops: int, earliest: float, latest: float, out: str):
    """A Ctrl-C soak's flags, parsed and checked: ``--stops``, ``--seed``,
    ``--earliest``/``--latest`` (seconds after a run's start, the uniform range of each
    stop's delay) and ``--out`` (a folder)."""
    import argparse

    p = argparse.ArgumentParser(description=description)
    p.add_argument("--stops", type=int, default=stops)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--earliest", type=float, default=earliest)
    p.add_argument("--latest", type=float, default=latest)
    p.add_argument("--out", default=out)
    a = p.parse_args()
    if a.stops < 1 or not 0 <= a.earliest <= a.latest:  # NaN fails too
        p.error("--stops must be >= 1 and 0 <= --earliest <= --latest")
    if os.path.exists(a.out) and not os.path.isdir(a.out):
        p.error(f"--out {a.out}: not a folder (the soak writes its runs there)")
    return a


def interrupted_after(argv: List[str], delay: float, stdout: Any, stderr: Any):
    """``argv`` started as a terminal starts a command (a session of its own, SIGINT taken,
    one thread), SIGINT to its process group ``delay`` s later (unless it has ended):
    (its exit status, the seconds from the signal to the exit, its stderr when piped)."""
    import signal
    import subprocess
    import time

    proc = subprocess.Popen(
        argv, stdout=stdout, stderr=stderr, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        env=dict(os.environ, OMP_NUM_THREADS="1"),
    )  # fmt: skip
    time.sleep(delay)
    sent = time.monotonic()
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
    err = proc.communicate(timeout=600)[1]
    return proc.returncode, time.monotonic() - sent, err


def stop_row(delay: float, took: float, status: int, said: str) -> Dict[str, Any]:
    """A soak's stop: its delay, the seconds to the exit, the exit status, the last line of
    what the command ``said`` and whether that holds a traceback."""
    lines = [line for line in said.strip().splitlines() if line.strip()]
    return {
        "delay": delay,
        "exit_s": took,
        "status": status,
        "last": lines[-1] if lines else "",
        "traceback": "Traceback" in said,
    }


COLUMNS = (  # (header, key, format); a missing value prints "-"
    ("real tok/s", "real_tokens_per_s", "{:.0f}"),
    ("s/update", "seconds_per_update", "{:.3f}"),
    ("pad share", "pad_share", "{:.1%}"),
    ("syncs/update", "syncs_per_update", "{}"),
    ("ops/update", "ops_per_update", "{}"),
    ("peak MiB", "peak_mem_mb", "{:.0f}"),
    ("time/real token vs masked_lm", "time_per_real_token_vs_masked_lm", "{:.2f}"),
    ("FLOPs/real token vs masked_lm", "flop_ratio_vs_masked_lm", "{:.2f}"),
    ("model/counted FLOPs", "flop_counter_ratio", "{:.2f}"),
    ("MFU", "mfu", "{:.1%}"),
)


def trainer_table(results: Dict[str, Dict]) -> str:
    """``trainer_speed.py``'s rows as a markdown table (gpu.py prints it too)."""
    lines = ["| row | " + " | ".join(c[0] for c in COLUMNS) + " |"]
    lines.append("|---" * (len(COLUMNS) + 1) + "|")
    for name, r in results.items():
        cells = [fmt.format(r[key]) if r.get(key) is not None else "-" for _, key, fmt in COLUMNS]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
