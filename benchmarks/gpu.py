#!/usr/bin/env python
"""The GPU figures of issue 23 in one command: speed, MFU and memory beside fairseq's
``masked_lm`` at the paper's sizes, the largest batch ``veco_large`` fits, the GPU tests.

Stages, in order, each a ``benchmarks/run.py`` (or pytest) process of its own:

  base_bf16    veco_base, bf16 autocast, every benchmark variant beside masked_lm
  base_fp16    veco_base, fp16 as fairseq-train --fp16 (FP16Optimizer, loss scaling)
  large_bf16   veco_large, bf16, ca_mlm (with and without stop-gradient) and tlm (every
               variant's model stays on the GPU for the interleaved rounds: all seven
               would not fit 80 GB at this batch)
  max_tokens   veco_large, bf16: the largest batch of masked_lm and of ca_mlm without and
               with --checkpoint-activations
  profile      veco_base, bf16: where the time of a masked_lm and a ca_mlm update goes
               (``step_profile.py``: the GPU's busy share, its work by kind of kernel)
  trainer      veco_base, bf16: fairseq's own Trainer from fairseq-train command lines,
               ca_mlm, tlm and the plugin's MLM beside fairseq's masked_lm on the same text
               (``trainer_speed.py``: real tokens/s, pad share, syncs, operators, MFU)
  tests        the tests that need a GPU (``benchmarks/gpu_only.py`` selects them)

Run only when named in ``--stages`` (issue 31, beyond the default call's budget):

  token_tasks  veco_base, bf16: fine-tuning tokens/s of veco_tagging and veco_span_qa beside
               fairseq's sentence_prediction (and transformers' XLM-R token classification
               and QA), ``benchmarks/token_tasks_speed.py``

Writes ``OUT/<device>-<date>.json`` (device, torch, CUDA, per stage: command, dtype,
seconds and run.py's figures: tokens/s, MFU, peak memory, ratios) and ``.md`` (the
README tables), both rewritten after every stage. Stages stop starting once
``--budget`` seconds are spent (a stage is cut at the budget); ``--previous JSON``
keeps the stages that JSON finished and runs the rest (the next call of the device).

``--dry-run``: the same stages on the CPU at veco_tiny size (a 1000-word vocabulary,
tiny batches, one round): the whole path in well under a minute.

    python benchmarks/gpu.py [--out benchmarks/results] [--stages base_bf16,tests]
        [--budget 560] [--previous benchmarks/results/DEVICE-DATE.json] [--dry-run]

On the device machine: ``bash benchmarks/gpu.sh --out $OUT`` (see benchmarks/GPU.md).
"""

import argparse
import datetime
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from common import trainer_table, write_json  # noqa: E402


def _warm_starts():
    """veco_plugin/pipeline/warm.py loaded by its path (the package would import fairseq
    here): each stage forks from a zygote that imported torch and fairseq once, not 5-10 s
    of imports per stage out of the device budget."""
    path = os.path.join(REPO, "veco_plugin", "pipeline", "warm.py")
    spec = importlib.util.spec_from_file_location("veco_warm", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.WarmStarts()


WARM = _warm_starts()

BATCH = ["--skip-nmt", "--min-len", "200", "--max-len", "250", "--rounds", "10"]
STAGES: Dict[str, List[str]] = {  # run.py flags on the GPU
    "base_bf16": ["--size", "veco_base", "--dtype", "bf16", "--pairs", "16", *BATCH],
    "base_fp16": ["--size", "veco_base", "--dtype", "fp16", "--pairs", "16", *BATCH],
    "large_bf16": [
        "--size",
        "veco_large",
        "--dtype",
        "bf16",
        "--pairs",
        "8",
        *BATCH,
        "--variants",
        "ca_mlm,ca_mlm_nostopgrad,tlm",
    ],
    "max_tokens": ["--size", "veco_large", "--dtype", "bf16", "--max-tokens-search"],
    "profile": [
        "--size",
        "veco_base",
        "--dtype",
        "bf16",
        "--pairs",
        "16",
        *BATCH[:-2],  # two rounds: the profile, not the timing, is this stage's figure
        "--rounds",
        "2",
        "--variants",
        "ca_mlm",
        "--profile",
    ],
    "trainer": ["--size", "veco_base", "--dtype", "bf16", "--max-tokens", "8192"]
    + ["--positions", "256", "--updates", "20", "--warmup", "5"],
    "tests": [],  # pytest, not run.py
    "token_tasks": ["--size", "veco_base", "--dtype", "bf16", "--batch", "32", "--length", "128"]
    + ["--rounds", "10"],
}
SCRIPTS = {"token_tasks": "token_tasks_speed.py", "trainer": "trainer_speed.py"}  # not run.py
OPT_IN = ("token_tasks",)  # run only when --stages names them
# --dry-run: appended to every run.py stage (argparse: the last value wins)
DRY = ["--device", "cpu", "--size", "veco_tiny", "--vocab", "1000", "--pairs", "2"]
DRY += ["--min-len", "8", "--max-len", "16", "--rounds", "1", "--dict-entries", "50"]
DRY += ["--search-length", "16", "--search-max-pairs", "3"]
TOKEN_DRY = ["--device", "cpu", "--size", "veco_tiny", "--vocab", "1000", "--batch", "4"]
TOKEN_DRY += ["--length", "16", "--rounds", "1"]  # token_tasks_speed.py's --dry-run flags
TRAINER_DRY = ["--dtype", "fp32", "--layers", "1", "--dim", "32", "--ffn", "64", "--heads", "2"]
TRAINER_DRY += ["--max-tokens", "600", "--positions", "48", "--updates", "1", "--warmup", "0"]
GPU_TEST_HINT = "torch.cuda.is_available()"  # files holding GPU tests say this


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--out", default=os.path.join(HERE, "results"), help="folder of the results")
    p.add_argument(
        "--stages",
        default=",".join(s for s in STAGES if s not in OPT_IN),
        help=f"comma-separated, in order ({', '.join(OPT_IN)}: only when named)",
    )
    p.add_argument("--budget", type=float, default=560.0, help="seconds for all stages")
    p.add_argument("--previous", help="an earlier JSON of this command: its finished stages stay")
    p.add_argument("--dry-run", action="store_true", help="the CPU at veco_tiny size")
    a = p.parse_args(argv)
    a.stages = a.stages.split(",")
    unknown = [s for s in a.stages if s not in STAGES]
    if unknown:
        p.error(f"--stages {','.join(unknown)}: each one of {', '.join(STAGES)}")
    if not a.budget > 0:  # NaN too
        p.error(f"--budget {a.budget}: give the seconds the stages may take, above 0")
    if a.previous and not os.path.isfile(a.previous):
        p.error(f"--previous {a.previous}: no such file (the JSON an earlier call wrote)")
    return a


def environment(dry_run: bool) -> Dict[str, Any]:
    """Device and versions, asked of a child process (the parent keeps no CUDA context
    that would hold memory while the stages run)."""
    probe = (
        "import json, platform, torch, numpy\n"
        "from importlib.metadata import PackageNotFoundError, version\n"
        "try:\n    fairseq = version('fairseq-fixed')\n"
        "except PackageNotFoundError:\n    fairseq = version('fairseq')\n"
        "cuda = torch.cuda.is_available() and not DRY\n"
        "print(json.dumps({'device': torch.cuda.get_device_name() if cuda else 'cpu',"
        " 'torch': torch.__version__, 'cuda': torch.version.cuda if cuda else None,"
        " 'fairseq': fairseq, 'numpy': numpy.__version__,"
        " 'python': platform.python_version()}))"
    ).replace("DRY", str(dry_run))
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    env = json.loads(out.stdout.strip().splitlines()[-1])
    try:  # the device's copy of the tree may have no .git, its machine no git
        git = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True)
        env["commit"] = git.stdout.strip() or None
    except OSError:
        env["commit"] = None
    return env


def slug(device: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-")


def run_stage(name: str, a, seconds: float) -> Dict[str, Any]:
    """One stage as a child process cut at ``seconds``: its command, time, exit status
    and figures (run.py's JSON; the tests' counts)."""
    scratch = tempfile.mkdtemp(prefix=f"veco-gpu-{name}-")
    if name == "tests":
        cmd, shown = tests_command(scratch)
    else:
        script = SCRIPTS.get(name, "run.py")
        dry = {"token_tasks_speed.py": TOKEN_DRY, "trainer_speed.py": TRAINER_DRY}.get(script, DRY)
        flags = STAGES[name] + (dry if a.dry_run else [])
        cmd = [sys.executable, os.path.join(HERE, script), *flags]
        cmd += ["--json", os.path.join(scratch, "result.json")]
        shown = " ".join([f"python benchmarks/{script}", *flags])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    # pytest loads no installed plugin by itself: the device image holds many (jaxtyping's
    # imports jax, which wants numpy 2); the suite needs none without -n
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    start = time.perf_counter()
    try:
        warm = WARM.popen(cmd, env, merge_stderr=False, cwd=REPO)
        if warm is None:
            proc = subprocess.run(
                cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=max(seconds, 1)
            )
            code, out, err = proc.returncode, proc.stdout, proc.stderr
        else:
            got = warm.communicate(max(seconds, 1))
            code, (out, err) = warm.returncode, (b.decode(errors="replace") for b in got)
        log = out + err
    except subprocess.TimeoutExpired as cut:
        code, out = None, ""
        log = f"cut at {seconds:.0f} s (--budget)\n{cut.stdout or ''}{cut.stderr or ''}"
    stage: Dict[str, Any] = {
        "command": shown,
        "seconds": round(time.perf_counter() - start, 1),
        "returncode": code,
    }
    if name == "tests":
        stage.update(test_counts(os.path.join(scratch, "junit.xml")))
    elif code == 0:
        with open(os.path.join(scratch, "result.json")) as f:
            stage["result"] = json.load(f)
    if code != 0:
        stage["log_tail"] = log[-3000:]
    print(f"{name}: exit {code} in {stage['seconds']} s", flush=True)
    # success: the tables (run.py's flat figures, the last block, are in the JSON)
    print(log[-2000:] if code != 0 else out.rstrip().rsplit("\n\n", 1)[0][-2500:], flush=True)
    return stage


def tests_command(scratch: str):
    """pytest over the test files holding GPU tests, ``gpu_only`` selecting those tests."""
    files = []
    for root, _, names in os.walk(os.path.join(REPO, "tests")):
        for n in sorted(names):
            path = os.path.join(root, n)
            if n.startswith("test_") and n.endswith(".py"):
                with open(path) as f:
                    if GPU_TEST_HINT in f.read():
                        files.append(os.path.relpath(path, REPO))
    flags = ["-q", "-p", "no:cacheprovider", "-p", "gpu_only", "-rs", *sorted(files)]
    cmd = [sys.executable, "-m", "pytest", *flags, "--basetemp", os.path.join(scratch, "tmp")]
    cmd += ["--junitxml", os.path.join(scratch, "junit.xml")]
    shown = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 PYTHONPATH=benchmarks python -m pytest"
    return cmd, " ".join([shown, *flags])


def test_counts(junit: str) -> Dict[str, Any]:
    """passed / failed / skipped and the test ids of a pytest JUnit XML (none: {})."""
    if not os.path.isfile(junit):
        return {}
    cases = ET.parse(junit).getroot().iter("testcase")
    outcome: Dict[str, str] = {}
    for case in cases:
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        outcome[f"{case.get('classname')}::{case.get('name')}"] = (kinds or ["passed"])[0]
    counts = {k: sum(v == k for v in outcome.values()) for k in ("passed", "skipped")}
    counts["failed"] = sum(v in ("failure", "error") for v in outcome.values())
    return {**counts, "tests": outcome}


# --- the README tables -----------------------------------------------------------------


def markdown(results: Dict[str, Any]) -> str:
    env = results["environment"]
    lines = [
        f"Measured on {env['device']} ({results['date']}; torch {env['torch']}, "
        f"CUDA {env['cuda']}, fairseq {env['fairseq']}) by `python benchmarks/gpu.py`"
        + (" --dry-run (CPU, veco_tiny: no figure to quote)" if results["dry_run"] else ""),
        "",
        "| size | dtype | objective | tokens/s | s/update | time x masked_lm | MFU "
        "| peak GiB | memory x masked_lm |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    stages = results["stages"]
    commands = []
    for name, stage in stages.items():
        r = stage.get("result")
        if name in ("tests", "max_tokens", "profile", *SCRIPTS) or r is None:
            continue
        commands.append(f"- {name}: `{stage['command']}`")
        names = [k[: -len("_tokens_per_s")] for k in r if k.endswith("_tokens_per_s")]
        names.sort(key=lambda n: (n != "masked_lm", n))
        size = r["size"] or f"{r['shape']['layers']}x{r['shape']['dim']}"
        for n in names:
            mfu = r[f"{n}_mfu"]
            lines.append(
                f"| {size} | {r['dtype']} | {n} | {r[f'{n}_tokens_per_s']:,.0f} "
                f"| {r[f'{n}_s_per_update']:.4f} | {r.get(f'{n}_time_ratio', 1.0):.2f} "
                f"| {'-' if mfu is None else f'{100 * mfu:.1f}%'} "
                f"| {r[f'{n}_peak_mem_mb'] / 1024:.2f} | {r.get(f'{n}_mem_ratio', 1.0):.2f} |"
            )
    if len(lines) == 4:  # no run.py stage ran: no table of them
        del lines[1:]
    met = [f"- {name}: {against_targets(name, s['result'])}" for name, s in stages.items()
           if name != "profile" and "ca_mlm_time_ratio" in s.get("result", {})]  # fmt: skip
    if met:
        lines += ["", "Issue 23's targets for ca_mlm:", "", *met]
    search = stages.get("max_tokens", {}).get("result")
    if search:
        lines += ["", "Largest batch one update fits in (real tokens of both sub-batches):", ""]
        lines += ["| objective | tokens | peak GiB | with --checkpoint-activations | peak GiB |"]
        lines += ["| --- | ---: | ---: | ---: | ---: |"]
        for ckpt in sorted(k for k in search if k.endswith("_checkpointed")):
            plain, n = (
                ckpt[: -len("_checkpointed")],
                ckpt[len("max_tokens_") : -len("_checkpointed")],
            )
            lines.append(
                f"| {n} | {search[plain]:,} | {search[f'{plain}_peak_mem_mb'] / 1024:.2f} "
                f"| {search[ckpt]:,} | {search[f'{ckpt}_peak_mem_mb'] / 1024:.2f} |"
            )
        commands.append(f"- max_tokens: `{stages['max_tokens']['command']}`")
    profiled = stages.get("profile", {}).get("result")
    if profiled:
        lines += [
            "",
            "Where a bf16 veco_base update's time goes (`--profile`): the share of the "
            "wall time the GPU was busy, and each kind of kernel's share of that work:",
            "",
        ]
        lines += profile_table(profiled)
        commands.append(f"- profile: `{stages['profile']['command']}`")
    tokens = stages.get("token_tasks", {}).get("result")
    if tokens:
        lines += ["", "Fine-tuning the token tasks beside fairseq's sentence_prediction:", ""]
        lines += token_table(tokens)
        commands.append(f"- token_tasks: `{stages['token_tasks']['command']}`")
    trainer = stages.get("trainer", {}).get("result")
    if trainer:
        lines += ["", "Through fairseq's own Trainer, as fairseq-train runs (the tables above: "
                  "run.py's private loop, torch's Adam under autocast):", ""]  # fmt: skip
        lines += [trainer_table(trainer["rows"])]
        commands.append(f"- trainer: `{stages['trainer']['command']}`")
    tests = stages.get("tests")
    if tests and "passed" in tests:
        lines += ["", f"GPU tests: {tests['passed']} passed, {tests['failed']} failed, "
                      f"{tests['skipped']} skipped (`{tests['command']}`)"]  # fmt: skip
    return "\n".join(lines + ["", "Commands:", "", *commands, ""])


def profile_table(r: Dict[str, Any]) -> List[str]:
    names = sorted(
        {k[: -len("_busy")] for k in r if k.endswith("_busy")}, key=lambda n: n != "masked_lm"
    )
    kinds = sorted({k.split("_share_", 1)[1] for k in r if "_share_" in k})
    lines = ["| objective | GPU busy | " + " | ".join(kinds) + " |"]
    lines.append("| --- | ---: | " + " | ".join("---:" for _ in kinds) + " |")
    for n in names:
        shares = " | ".join(f"{100 * r.get(f'{n}_share_{k}', 0.0):.1f}%" for k in kinds)
        lines.append(f"| {n} | {100 * r[f'{n}_busy']:.0f}% | {shares} |")
    return lines


def token_table(r: Dict[str, Any]) -> List[str]:
    """``token_tasks_speed.py``'s columns: tokens/s and the ratio to sentence_prediction's
    (issue 31's target for the token tasks: >= 0.95, met or MISSED)."""
    size = r["size"] or f"{r['shape']['layers']}x{r['shape']['dim']}"
    said = f"{size}, {r['dtype']}, {r['batch']} windows x {r['length']} tokens"
    said += f" ({r['tokens_per_step']:,} real)"
    if r["transformers_skipped"]:
        said += f"; transformers columns skipped: {r['transformers_skipped']}"
    lines = [
        said,
        "",
        "| column | tokens/s | s/update | x sentence_prediction | MFU | peak GiB | >= 0.95 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    names = [k[: -len("_tokens_per_s")] for k in r if k.endswith("_tokens_per_s")]
    names.sort(key=lambda n: (n != "sentence_prediction", n.startswith("hf_"), n))
    for n in names:
        mfu, met = r[f"{n}_mfu"], r.get(f"{n}_met")
        lines.append(
            f"| {n} | {r[f'{n}_tokens_per_s']:,.0f} | {r[f'{n}_s_per_update']:.4f} "
            f"| {r[f'{n}_ratio']:.3f} | {'-' if mfu is None else f'{100 * mfu:.1f}%'} "
            f"| {r[f'{n}_peak_mem_mb'] / 1024:.2f} "
            f"| {'' if met is None else ('met' if met else 'MISSED')} |"
        )
    return lines


def against_targets(stage: str, r: Dict[str, Any]) -> str:
    """ca_mlm against issue 23's targets: <= 2.35x masked_lm's time (the math: 2.33),
    <= 2.4x its memory, an MFU >= masked_lm's (and >= 40% at base size in bf16)."""

    def verdict(ok: bool) -> str:
        return "met" if ok else "MISSED"

    time_x, mem_x = r["ca_mlm_time_ratio"], r["ca_mlm_mem_ratio"]
    said = [
        f"{time_x:.2f}x masked_lm's time (<= 2.35: {verdict(time_x <= 2.35)})",
        f"{mem_x:.2f}x its memory (<= 2.4: {verdict(mem_x <= 2.4)})",
    ]
    ours, theirs = r["ca_mlm_mfu"], r["masked_lm_mfu"]
    if ours is not None and theirs is not None:
        floor = 0.40 if stage == "base_bf16" else 0.0
        said.append(
            f"MFU {100 * ours:.1f}% vs masked_lm's {100 * theirs:.1f}% (>= masked_lm's"
            + (" and >= 40%" if floor else "")
            + f": {verdict(ours >= theirs and ours >= floor)})"
        )
    return ", ".join(said)


def write(results: Dict[str, Any], out: str, name: str) -> None:
    """``out/name.json`` and ``out/name.md`` (after every stage: a cut call keeps them)."""
    write_json(os.path.join(out, f"{name}.json"), results)
    with open(os.path.join(out, f"{name}.md"), "w") as f:
        f.write(markdown(results))


def main(argv=None) -> int:
    a = parse_args(argv)
    started = time.perf_counter()
    results: Dict[str, Any] = {"stages": {}}
    if a.previous:
        with open(a.previous) as f:
            results = json.load(f)
    env = environment(a.dry_run)
    if a.previous and results["environment"]["device"] != env["device"]:
        sys.exit(f"gpu.py: error: --previous {a.previous} was measured on "
                 f"{results['environment']['device']}, this is {env['device']}")  # fmt: skip
    results.setdefault("environment", env)
    results.setdefault("date", datetime.date.today().isoformat())
    results["dry_run"] = a.dry_run
    name = f"{slug(env['device'])}-{results['date']}"
    done = {s for s, stage in results["stages"].items() if stage.get("returncode") == 0}
    left: List[str] = [s for s in a.stages if s not in done]
    print(f"{env['device']}: stages {', '.join(left) or 'none'} ({', '.join(done)} done)")
    while left:
        remaining = a.budget - (time.perf_counter() - started)
        if remaining < 30:
            print(f"--budget spent: left for the next call: {','.join(left)}")
            break
        stage = left.pop(0)
        results["stages"][stage] = run_stage(stage, a, remaining)
        write(results, a.out, name)
    WARM.close()
    write(results, a.out, name)
    print(f"wrote {os.path.join(a.out, name)}.json and .md")
    unfinished = [s for s in a.stages if results["stages"].get(s, {}).get("returncode") != 0]
    return 1 if unfinished else 0


if __name__ == "__main__":
    sys.exit(main())
