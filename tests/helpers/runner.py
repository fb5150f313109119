"""Run the real console scripts of this environment and read fairseq's JSON logs."""

import os
import subprocess
import sys
from typing import Dict, List, Optional

from fairseq import options
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

from veco_plugin.fairseq_logs import json_records
from veco_plugin.pipeline.warm import WarmStarts
from veco_plugin.pipeline.warm_path import WarmPath
from veco_plugin.pretraining_command import PretrainingCommand

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
USER_DIR = os.path.join(REPO, "veco_plugin")
BIN = os.path.dirname(sys.executable)


def env(**extra) -> Dict[str, str]:
    """The commands' environment: this interpreter's scripts first on PATH, one thread;
    the Python commands a shell script starts are warm (:data:`WARM_PATH`)."""
    e = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    e["PATH"] = BIN + os.pathsep + e.get("PATH", "")
    e.pop("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", None)  # the plugin must not need it
    e.update(extra)
    return WARM_PATH.env(e)


WARM = WarmStarts()  # this test process's zygotes
WARM_PATH = WarmPath(WARM)  # shims that start a shell script's Python commands from them


def run(
    script: str, args: List[str], check: bool = True, cold: bool = False, **kw
) -> subprocess.CompletedProcess:
    """Run ``BIN/script args`` (``kw``: ``env``, ``cwd``, ``timeout``; any other keyword
    of ``subprocess.run`` starts it cold), forked from a warm interpreter as the pipelines
    start their stages (:mod:`veco_plugin.pipeline.warm`), or cold (``cold``: what only a
    fresh interpreter shows, its import-time warnings). On failure raise with the tail of
    its output."""
    argv = [os.path.join(BIN, script)] + [str(a) for a in args]
    environ = kw.pop("env", env())
    warm = None
    if not cold and not kw.keys() - {"cwd", "timeout"}:
        warm = WARM.popen(argv, environ, merge_stderr=False, cwd=kw.get("cwd"))
    if warm is None:
        proc = subprocess.run(argv, capture_output=True, text=True, env=environ, **kw)
    else:
        out, err = warm.communicate(kw.get("timeout"))
        proc = subprocess.CompletedProcess(
            argv, warm.returncode, out.decode(errors="replace"), err.decode(errors="replace")
        )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{script} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
        )
    return proc


def start(argv: List[str], cwd: Optional[str] = None, environ: Optional[Dict[str, str]] = None):
    """``argv`` started with its stdout and stderr in one pipe (bytes), forked from a warm
    interpreter where one can run it, else cold: a process with ``communicate(timeout)``,
    ``returncode`` and a ``pid`` that leads its own process group (several such processes
    run side by side: the ranks of a job)."""
    environ = env() if environ is None else environ
    argv = [str(a) for a in argv]
    proc = WARM.popen(argv, environ, merge_stderr=True, cwd=cwd)
    if proc is None:
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=environ, cwd=cwd,
            start_new_session=True,
        )  # fmt: skip
    return proc


def json_logs(output: str, tag: str = "train_inner") -> List[Dict]:
    """fairseq ``--log-format json`` records of one kind (train_inner, valid, train)."""
    return json_records(output.splitlines(), tag)


def pretrain_args(data, save_dir, criterion: str, updates: int, *extra) -> List[str]:
    """fairseq-train's arguments of the tests' toy pre-training: ``veco_tiny`` on en-de at
    48 positions a side, no gradient clipping, validation at the last update and at the end
    of every epoch; ``extra`` last (it overrides the flags before it)."""
    return PretrainingCommand(
        data=str(data),
        save_dir=str(save_dir),
        criterion=criterion,
        updates=updates,
        warmup=20,
        max_tokens=2000,
        max_positions=48,
        bi_positions=48,
        adam_eps=None,
        clip_norm=None,
        validate="at_end_and_epochs",
        log_interval=25,
        extra=extra,
    ).args()


def monolingual(args: List) -> List:
    """``pretrain_args`` without the bilingual pairs (monolingual text only)."""
    i = args.index("--bi-pairs")
    return args[:i] + args[i + 2 :]


def train_cfg(args: List):
    """fairseq-train's configuration of ``args``, parsed in-process as fairseq_cli.train
    does (``--bf16`` left on the CPU: fairseq's parser would also turn on ``--tpu``)."""
    parsed = options.parse_args_and_arch(options.get_training_parser(), [str(a) for a in args])
    parsed.tpu = False
    return convert_namespace_to_omegaconf(parsed)


# a restored checkpoint's weights only, as fine-tuning and continued pre-training start
RESET = ["--reset-optimizer", "--reset-dataloader", "--reset-meters", "--reset-lr-scheduler"]

# a tiny RoBERTa/veco size: 2 layers x 64, FFN 256, 4 heads
TINY = [
    "--encoder-layers",
    "2",
    "--encoder-embed-dim",
    "64",
    "--encoder-ffn-embed-dim",
    "256",
    "--encoder-attention-heads",
    "4",
    "--max-positions",
    "128",
]


def roberta_checkpoint(data_dir, save_dir) -> str:
    """A tiny RoBERTa that fairseq's own masked_lm task trains for 3 updates."""
    run(
        "fairseq-train",
        [
            data_dir,
            "--user-dir",
            USER_DIR,
            "--task",
            "masked_lm",
            "--arch",
            "roberta",
            *TINY,
            "--criterion",
            "masked_lm",
            "--tokens-per-sample",
            "64",
            "--optimizer",
            "adam",
            "--lr",
            "1e-3",
            "--max-update",
            "3",
            "--max-tokens",
            "512",
            "--cpu",
            "--save-dir",
            save_dir,
            "--no-epoch-checkpoints",
            "--disable-validation",
            "--num-workers",
            "0",
        ],
    )
    return f"{save_dir}/checkpoint_last.pt"
