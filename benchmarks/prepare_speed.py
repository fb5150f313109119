#!/usr/bin/env python
"""Preparation speed and memory: ``veco-prepare-pretraining`` vs sentencepiece's encoder
+ ``fairseq-preprocess`` alone (the anchor), on the same real text.

Text: the En-De, En-Fr and En-Es corpora of the system's gettext catalogs
(``veco_plugin.corpora.gettext``), laid out as ``TEXT/mono/{en,de,fr,es}/*.txt`` and
``TEXT/bi/en-{de,fr,es}/train.*``, every file repeated ``--repeat`` times (about 400k
lines at 1). Lines = monolingual lines + both sides of every pair.

* ours, whole: the console script from text to ``--shards 2`` shards (counting pass,
  the α-sampled sentencepiece training on at most ``--spm-sample-lines`` lines,
  encoding, binarizing) with ``--workers W``;
* ours, shards: the same command again after deleting the shards (the plan, model and
  dictionary kept): the per-shard work only;
* anchor: the same ``spm.model`` and ``dict.txt``; sentencepiece's Python encoder
  (``num_threads=W``) writes each file's pieces, then one process runs fairseq's
  ``preprocess`` (``--workers W``) on every corpus (one import, as ours).

``--measure memory``: the peak RSS of ours (``--workers 1``; the whole command, and the
shards alone) on the text repeated 1 and 10 times (``--memory-repeat``), each measured
in a fresh parent (``RUSAGE_CHILDREN``: the largest process).

    python benchmarks/prepare_speed.py [--work DIR] [--repeat 2] [--workers 1 2] \\
        [--vocab-size 8000] [--spm-sample-lines 100000] [--measure speed memory] [--json PATH]

Ratios > 1: ours is faster. The load average is printed with each figure (the
machine may be shared).
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import write_json  # noqa: E402

BIN = os.path.dirname(sys.executable)
LANGS = ("de", "fr", "es")

PREPROCESS = """
import sys
from fairseq import options
from fairseq_cli.preprocess import main
for line in sys.stdin:
    main(options.get_preprocessing_parser().parse_args(line.split()))
"""

# run argv[1:], print the peak RSS (KiB) of its largest process
PEAK_RSS = """
import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", default="runs/prepare_speed", help="scratch folder")
    p.add_argument("--repeat", type=int, default=2, help="copies of the text (speed)")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--vocab-size", type=int, default=8000)
    p.add_argument("--spm-sample-lines", type=int, default=100000)
    p.add_argument(
        "--measure",
        nargs="+",
        choices=["speed", "memory"],
        default=["speed"],
        help="speed (lines/s vs the anchor), memory (peak RSS, 1x vs 10x text)",
    )
    p.add_argument("--memory-repeat", type=int, nargs=2, default=[1, 10])
    p.add_argument("--json", help="write the figures here")
    return p.parse_args(argv)


def env() -> Dict[str, str]:
    e = dict(os.environ, OMP_NUM_THREADS="1")
    e["PATH"] = BIN + os.pathsep + e["PATH"]
    return e


def load() -> str:
    return "load %.2f %.2f %.2f" % os.getloadavg()


def gettext_corpora(folder: Path) -> Path:
    """``folder/<x>/{train.en,train.<x>,mono.en}`` (built once)."""
    from veco_plugin.corpora.gettext import CorpusConfig, build_corpus
    from veco_plugin.corpora.text import write_lines

    for x in LANGS:
        if (folder / x / "mono.en").exists():
            continue
        corpus = build_corpus(CorpusConfig(tgt_lang=x, output=folder / x))
        (folder / x).mkdir(parents=True, exist_ok=True)
        write_lines(str(folder / x / "train.en"), (en for en, _ in corpus.pairs["train"]))
        write_lines(str(folder / x / f"train.{x}"), (t for _, t in corpus.pairs["train"]))
        write_lines(str(folder / x / "mono.en"), corpus.mono_en)
    return folder


def make_text(corpora: Path, text: Path, repeat: int) -> int:
    """TEXT with every file ``repeat`` times; the number of lines."""
    files = {"mono/en/en.txt": corpora / "de/mono.en"}
    for x in LANGS:
        files[f"mono/{x}/{x}.txt"] = corpora / x / f"train.{x}"
        files[f"bi/en-{x}/train.en"] = corpora / x / "train.en"
        files[f"bi/en-{x}/train.{x}"] = corpora / x / f"train.{x}"
    lines = 0
    for name, src in files.items():
        data = src.read_bytes()
        (text / name).parent.mkdir(parents=True, exist_ok=True)
        if not (text / name).exists():
            (text / name).write_bytes(data * repeat)
        lines += data.count(b"\n") * repeat
    return lines


def ours(text: Path, data: Path, a, workers: int) -> List[str]:
    return [
        os.path.join(BIN, "veco-prepare-pretraining"),
        *("--text", str(text), "--out", str(data), "--shards", "2", "--workers", str(workers)),
        *("--vocab-size", str(a.vocab_size), "--spm-sample-lines", str(a.spm_sample_lines)),
        *("--valid-lines", "100"),
    ]


def cpu_seconds() -> float:
    """CPU time (user + system) of this process and of its finished children."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN
    )
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def timed(command: List[str], **kw) -> Tuple[float, float]:
    """Wall-clock and CPU seconds of ``command``."""
    start, cpu = time.perf_counter(), cpu_seconds()
    subprocess.run(command, check=True, env=env(), capture_output=True, **kw)
    return time.perf_counter() - start, cpu_seconds() - cpu


def anchor(text: Path, data: Path, out: Path, workers: int) -> Tuple[float, float]:
    """sentencepiece encoder -> pieces files, then fairseq-preprocess of every corpus."""
    import sentencepiece as spm

    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    start, cpu = time.perf_counter(), cpu_seconds()
    sp = spm.SentencePieceProcessor(model_file=str(data / "spm.model"))
    for src in sorted(text.glob("*/*/*")):
        dst = out / "pieces" / src.parent.name / src.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        with open(src, encoding="utf-8") as f, open(dst, "w", encoding="utf-8") as g:
            while True:
                chunk = [line.rstrip("\n") for line in f.readlines(1 << 22)]
                if not chunk:
                    break
                pieces = sp.encode(chunk, out_type=str, num_threads=workers)
                g.write("".join(" ".join(p) + "\n" for p in pieces))
    d = str(data / "dict.txt")
    commands = []
    for folder in sorted((out / "pieces").iterdir()):
        common = f"--srcdict {d} --workers {workers} --destdir {out}/bin/{folder.name}"
        if "-" in folder.name:
            src, tgt = folder.name.split("-")
            commands.append(f"-s {src} -t {tgt} --tgtdict {d} --trainpref {folder}/train {common}")
        else:
            commands.append(f"--only-source --trainpref {folder}/{folder.name}.txt {common}")
    subprocess.run(
        [sys.executable, "-c", PREPROCESS],
        input="\n".join(commands) + "\n",
        text=True,
        check=True,
        capture_output=True,
        env=env(),
    )
    return time.perf_counter() - start, cpu_seconds() - cpu


def speed(a, corpora: Path, work: Path) -> Dict[str, float]:
    text = work / f"text-x{a.repeat}"
    lines = make_text(corpora, text, a.repeat)
    print(f"text: {lines} lines (x{a.repeat}), {os.cpu_count()} cores; {load()}")
    result: Dict[str, float] = {"lines": lines}
    for w in a.workers:
        data = work / f"data-w{w}"
        shutil.rmtree(data, ignore_errors=True)
        whole, whole_cpu = timed(ours(text, data, a, w))
        for k in range(2):
            shutil.rmtree(data / f"shard{k}")
        shards, shards_cpu = timed(ours(text, data, a, w))
        base, base_cpu = anchor(text, data, work / f"anchor-w{w}", w)
        result.update(
            {
                f"ours_whole_lps_w{w}": lines / whole,
                f"ours_shards_lps_w{w}": lines / shards,
                f"anchor_lps_w{w}": lines / base,
                f"whole_ratio_w{w}": base / whole,
                f"shards_ratio_w{w}": base / shards,
                f"whole_cpu_ratio_w{w}": base_cpu / whole_cpu,
                f"shards_cpu_ratio_w{w}": base_cpu / shards_cpu,
            }
        )
        print(
            f"workers {w}: ours whole {whole:.1f} s ({lines / whole:,.0f} lines/s; CPU "
            f"{whole_cpu:.1f} s), shards only {shards:.1f} s ({lines / shards:,.0f}; CPU "
            f"{shards_cpu:.1f} s); anchor {base:.1f} s ({lines / base:,.0f}; CPU "
            f"{base_cpu:.1f} s) -> ratio whole {base / whole:.2f} (CPU "
            f"{base_cpu / whole_cpu:.2f}), shards only {base / shards:.2f} (CPU "
            f"{base_cpu / shards_cpu:.2f}); {load()}"
        )
    if len(a.workers) > 1:
        w0, w1 = a.workers[0], a.workers[-1]
        for name in ("ours_whole", "ours_shards", "anchor"):
            gain = result[f"{name}_lps_w{w1}"] / result[f"{name}_lps_w{w0}"]
            result[f"{name}_scaling_w{w0}_to_w{w1}"] = gain
            print(f"{name}: {w1} workers / {w0} = {gain:.2f}x (linear: {w1 / w0:.0f}x)")
    return result


def peak_rss_mib(command: List[str]) -> float:
    """Peak RSS of ``command`` (its largest process), measured in a fresh parent."""
    wrapped = [sys.executable, "-c", PEAK_RSS, *command]
    out = subprocess.run(wrapped, check=True, env=env(), capture_output=True, text=True)
    return int(out.stdout.split()[-1]) / 1024


def memory(a, corpora: Path, work: Path) -> Dict[str, float]:
    """Peak RSS of the whole preparation and of the shards alone (``--workers 1``)."""
    peaks: Dict[str, float] = {}
    for r in a.memory_repeat:
        text = work / f"text-x{r}"
        lines = make_text(corpora, text, r)
        data = work / f"memory-x{r}"
        shutil.rmtree(data, ignore_errors=True)
        start = time.perf_counter()
        peaks[f"whole_x{r}"] = peak_rss_mib(ours(text, data, a, 1))
        for k in range(2):
            shutil.rmtree(data / f"shard{k}")
        peaks[f"shards_x{r}"] = peak_rss_mib(ours(text, data, a, 1))
        print(
            f"x{r}: {lines} lines, peak RSS whole {peaks[f'whole_x{r}']:.0f} MiB, shards only "
            f"{peaks[f'shards_x{r}']:.0f} MiB ({time.perf_counter() - start:.0f} s); {load()}"
        )
    r0, r1 = a.memory_repeat
    result = {f"peak_rss_mib_{k}": v for k, v in peaks.items()}
    for step in ("whole", "shards"):
        ratio = peaks[f"{step}_x{r1}"] / peaks[f"{step}_x{r0}"]
        result[f"peak_rss_ratio_{step}"] = ratio
        print(f"peak RSS x{r1} / x{r0}, {step}: {ratio:.3f} (target <= 1.2)")
    return result


def main(argv=None):
    a = parse_args(argv)
    work = Path(a.work).resolve()
    corpora = gettext_corpora(work / "gettext")
    result: Dict[str, float] = {}
    if "speed" in a.measure:
        result.update(speed(a, corpora, work))
    if "memory" in a.measure:
        result.update(memory(a, corpora, work))
    if a.json:
        write_json(a.json, result)
    print(json.dumps({k: round(v, 3) for k, v in result.items()}))


if __name__ == "__main__":
    main()
