"""``python -m veco_plugin.quickstart [flags]`` (``--help``): the whole quickstart.

The paper's NMT initialization comparison (Table 3 and its learning curve) at toy scale,
end to end on local data; sized for 2 CPU cores by default (about half an hour)::

    python -m veco_plugin.quickstart --run-dir runs/quickstart       # (= make quickstart)
    python -m veco_plugin.quickstart --run-dir runs/qs-gpu --gpu --arch base \\
        --pretrain-updates 50000 --finetune-updates 20000 --max-tokens 8192 \\
        --pretrain-max-tokens 24576

Re-running resumes: a finished stage (``RUN/stamps/<stage>.done``, its exact command as
JSON) is skipped; an interrupted fairseq-train continues from its checkpoint_last.pt. A
finished stage re-run with other settings is an error: ``--force`` starts RUN afresh.
The pipelines run side by side, at most ``--jobs`` stages at a time (2 on CPU with >= 2
cores: two 1-thread fairseq processes use 2 cores far better than one 2-thread process);
every output line is prefixed by its stage.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from typing import Optional, Sequence

from veco_plugin.pipeline.runner import Console, PipelineError, Runner, interruptible, stamp_path

from . import options, stages
from .options import PROG, RESTART, Config, QuickstartError


def prepare_run_dir(run: str, force: bool, console: Console) -> str:
    """``--force`` deletes ``run`` (only a quickstart run directory); returns ``run``
    absolute, with ``stamps/`` and ``logs/``."""
    if force and os.path.exists(run):
        if not (os.path.isdir(os.path.join(run, "stamps")) or not os.listdir(run)):
            raise QuickstartError(
                f"--force: {run} does not look like a quickstart run directory (no stamps/); "
                "not deleting it"
            )
        console.say(f"== --force: deleting {run}")
        shutil.rmtree(run)
    os.makedirs(os.path.join(run, "stamps"), exist_ok=True)
    os.makedirs(os.path.join(run, "logs"), exist_ok=True)
    return os.path.abspath(run)


def drop_stale_report(run: str) -> None:
    """A stage that ran again since the last report: the report is redone too."""
    report = stamp_path(run, "report")
    if not os.path.isfile(report):
        return
    since = os.path.getmtime(report)
    stamps = os.path.join(run, "stamps")
    for name in os.listdir(stamps):
        if name.endswith(".done") and os.path.getmtime(os.path.join(stamps, name)) > since:
            os.remove(report)
            return


def run_all(cfg: Config, runner: Runner, started: float) -> int:
    say, p = runner.console.say, stages.Paths(cfg.run_dir)
    say(
        f"== quickstart: run dir {cfg.run_dir}; arch veco_{cfg.arch}/veco_transformer_{cfg.arch}; "
        f"inits {' '.join(stages.inits(cfg))};"
    )
    say(
        f"   pre-training {cfg.pretrain_updates} updates, fine-tuning {cfg.finetune_updates} "
        f"updates; {cfg.device}, {cfg.jobs} job(s) x {cfg.threads} thread(s)"
    )
    runner.run_stage(stages.corpus(cfg))
    runner.run_stage(stages.data(cfg))
    if cfg.data_only:
        say(f"== --data-only: {p.data} (pre-training) and {p.nmt_bin} (translation) are ready")
        return 0
    runner.run_pipelines(stages.pipelines(cfg))
    drop_stale_report(cfg.run_dir)
    runner.run_stage(stages.report(cfg))
    with open(os.path.join(cfg.run_dir, "results.md"), encoding="utf-8") as f:
        sys.stdout.write(f.read())
    seconds = int(time.monotonic() - started)
    say(
        f"== quickstart finished in {seconds // 60} min {seconds % 60} s (this invocation): "
        f"{cfg.run_dir}/results.md, {cfg.run_dir}/results.json, {cfg.run_dir}/learning_curve.png"
    )
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    started = time.monotonic()
    console = Console(PROG)
    try:
        cfg = options.check(options.parse_args(argv))
        cfg.run_dir = prepare_run_dir(cfg.run_dir, cfg.force, console)
    except QuickstartError as exc:
        console.error(str(exc))
        return 1
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(cfg.threads)
    os.environ["PYTHONUNBUFFERED"] = "1"
    runner = Runner(cfg.run_dir, cfg.jobs, console, RESTART)

    def work() -> int:
        try:
            return run_all(cfg, runner, started)
        except PipelineError as exc:
            console.error(str(exc))
            return 1

    return interruptible(runner, work)


if __name__ == "__main__":
    sys.exit(main())
