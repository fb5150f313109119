"""The quickstart's flags, the ``--smoke`` preset and their checks: argv -> :class:`Config`.

The one conversion boundary: flags (:class:`Config`'s fields, made into flags by fairseq's
``gen_parser_from_dataclass``) are parsed as text, checked in a fixed order (the first
problem ends the run with ``quickstart: error: ...``, exit status 1), then become a typed
:class:`Config` that every stage reads. Pre-training runs that can be switched off get
``--<run>`` / ``--no-<run>`` from the table of objectives (``--xlm/--no-xlm``); a row
that needs an English-X word list is checked here too (``--src en``, the target language's
gettext catalogs, ``veco-gettext-dictionary``), before any stage runs.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import sys
from dataclasses import dataclass, field, fields
from typing import (
    Any,
    Callable,
    Dict,
    List,
    NoReturn,
    Optional,
    Sequence,
    Tuple,
    get_type_hints,
)

from veco_plugin.cli.config_flags import add_config_flags
from veco_plugin.objectives import OBJECTIVES, WORD_LIST, Objective

PROG = "quickstart"
RESTART = "--force to start afresh, or another --run-dir"
"""How a stage refused for its stamp (other settings) is told to start afresh."""
# The repository this package lives in: scripts/ and the default --user-dir.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(PACKAGE_DIR)
DEFAULT_LOCALE_DIR = "/usr/share/locale"
"""``--locale-dir``'s default (read when the parser is built)."""

# What --smoke sets (later flags win): tiny everything, for tests.
SMOKE_PRESET: Dict[str, str] = dict(
    valid_size="40",
    test_size="40",
    max_train_pairs="2000",
    vocab_size="1000",
    pretrain_updates="20",
    pretrain_max_tokens="3072",
    pretrain_warmup="10",
    finetune_updates="20",
    max_tokens="1024",
    finetune_warmup="10",
    eval_interval="10",
    average_last="2",
    examples="2",
    log_interval="10",
    dwa_updates="5",
    align_pairs="10",
)

# What --gpu sets besides the device (later flags win; --smoke still shrinks everything):
# a pre-training budget a GPU runs in minutes per objective, at the paper's small size
# (6 layers x 768), fine-tuned and evaluated as on the CPU.
GPU_PRESET: Dict[str, str] = dict(
    arch="small",
    decoder_layers="last:3",
    pretrain_updates="10000",
    pretrain_max_tokens="16384",
    pretrain_lr="5e-4",
    pretrain_warmup="1000",
    finetune_updates="3000",
    max_tokens="8192",
    finetune_lr="5e-4",
    finetune_warmup="400",
    eval_interval="500",
    log_interval="100",
    dwa_updates="1000",
    align_pairs="1000",
)

TOOLS = (
    "fairseq-train",
    "fairseq-preprocess",
    "fairseq-generate",
    "veco-gettext-corpus",
    "veco-init-nmt",
    "veco-average-checkpoints",
    "veco-align",
)


class QuickstartError(Exception):
    """A bad flag or an unusable run directory: ``quickstart: error: MESSAGE``, exit 1."""


# The --help sections, in order; a Config field whose metadata names one is a flag there.
PATHS, CORPUS, MODEL, PRETRAINING, FINETUNING, EVALUATION, ALIGNMENT, MACHINE, OTHER = (
    "paths",
    "corpus",
    "model",
    "pre-training",
    "fine-tuning (identical for every initialization)",
    "evaluation",
    "word alignment (XLM-Align)",
    "machine",
    "other",
)


def _flag(group: str, default: Any, help: str) -> Any:
    """A :class:`Config` field that is the flag ``--<field-name>`` in the section
    ``group`` of ``--help`` (read as text and checked by :func:`check`)."""
    return field(default=default, metadata={"group": group, "help": help})


@dataclass
class Config:
    """Every setting of a quickstart run, typed and checked (paths absolute where the
    stages need them so). A field with a ``group`` is a flag of :func:`get_parser` with
    the field's default; the others (``kw_only``) are set by :func:`check`."""

    run_dir: str = _flag(PATHS, "runs/quickstart", "everything goes here [%(default)s]")
    user_dir: str = _flag(PATHS, PACKAGE_DIR, "fairseq --user-dir [%(default)s]")
    python: str = _flag(
        PATHS, "python", "Python with sentencepiece/sacrebleu/matplotlib [%(default)s]"
    )
    text: str = field(kw_only=True)
    """``--text DIR``: the corpus in DIR instead of gettext ('' = gettext)."""
    locale_dir: str = _flag(
        CORPUS,
        DEFAULT_LOCALE_DIR,
        "gettext catalogs: the corpus, and the word list of rows that need one [%(default)s]",
    )
    src: str = _flag(CORPUS, "en", "source language [%(default)s]")
    tgt: str = _flag(CORPUS, "de", "target language [%(default)s]")
    valid_size: int = _flag(CORPUS, 500, "held-out valid pairs (gettext) [%(default)s]")
    test_size: int = _flag(CORPUS, 1000, "held-out test pairs (gettext) [%(default)s]")
    max_train_pairs: int = _flag(
        CORPUS, 0, "keep the first N train pairs and mono lines, 0 = all [%(default)s]"
    )
    vocab_size: int = _flag(CORPUS, 4000, "joint sentencepiece pieces [%(default)s]")
    arch: str = _flag(
        MODEL, "tiny", "tiny|small|base|large: veco_SIZE, veco_transformer_SIZE [%(default)s]"
    )
    decoder_layers: str = _flag(
        MODEL,
        "all",
        "veco-init-nmt --decoder-layers (all, last:N, first:N, list) [%(default)s]",
    )
    max_positions: int = _flag(
        MODEL, 256, "pre-training (mono; bi gets N/2 a side) and NMT positions [%(default)s]"
    )
    pretrain_updates: int = _flag(PRETRAINING, 1000, "updates of each pre-training [%(default)s]")
    pretrain_max_tokens: int = _flag(
        PRETRAINING,
        6144,
        "tokens per update (mono + bi sub-batch, TLM included) [%(default)s]",
    )
    pretrain_lr: str = _flag(PRETRAINING, "2e-3", "[%(default)s]")
    pretrain_warmup: int = _flag(PRETRAINING, 200, "[%(default)s]")
    finetune_updates: int = _flag(FINETUNING, 600, "updates [%(default)s]")
    max_tokens: int = _flag(FINETUNING, 4096, "tokens per batch [%(default)s]")
    finetune_lr: str = _flag(FINETUNING, "2e-3", "[%(default)s]")
    finetune_warmup: int = _flag(FINETUNING, 200, "[%(default)s]")
    eval_interval: int = _flag(
        FINETUNING,
        100,
        "checkpoint + valid loss + greedy valid BLEU every K updates [%(default)s]",
    )
    average_last: int = _flag(EVALUATION, 3, "average the last N checkpoints [%(default)s]")
    beam: int = _flag(EVALUATION, 5, "beam size on the test set [%(default)s]")
    gen_max_tokens: int = _flag(EVALUATION, 8000, "fairseq-generate --max-tokens [%(default)s]")
    examples: int = _flag(EVALUATION, 5, "translated test examples in the report [%(default)s]")
    dwa_updates: int = _flag(
        ALIGNMENT,
        300,
        "dwa updates from the ca_mlm checkpoint; 0: no alignment stages [%(default)s]",
    )
    align_pairs: int = _flag(
        ALIGNMENT, 200, "test pairs veco-align aligns before and after dwa [%(default)s]"
    )
    device: str = field(kw_only=True)
    """``cpu`` or ``gpu`` (``--cpu``/``--gpu``)."""
    fp16: bool = _flag(MACHINE, False, "mixed precision (GPU)")
    jobs: int = field(kw_only=True)
    """stages run side by side (``--jobs``; unset, it depends on the device and cores)."""
    threads: int = _flag(MACHINE, 1, "OMP/MKL threads per job [%(default)s]")
    workers: int = _flag(MACHINE, 2, "fairseq-preprocess workers [%(default)s]")
    seed: int = _flag(MACHINE, 1, "seed of every stage [%(default)s]")
    log_interval: int = _flag(MACHINE, 50, "fairseq-train --log-interval [%(default)s]")
    force: bool = _flag(OTHER, False, "delete RUN and run every stage again")
    data_only: bool = _flag(
        OTHER,
        False,
        "stop after the corpus and data stages (RUN/data, RUN/nmt-bin; what "
        "benchmarks/init_sweep.py builds on)",
    )
    num_decoder_layers: int = field(kw_only=True)
    """decoder depth that ``--decoder-layers`` gives (fine-tuning's ``--decoder-layers``)."""
    switches: Dict[str, bool] = field(default_factory=dict)
    """``--<run>/--no-<run>`` of the switchable pre-training runs: run -> on."""

    def updates(self, setting: str) -> int:
        """The value of an update-count setting named by the objectives table."""
        return int(getattr(self, setting))

    def pretraining_runs(self, rows: Sequence[Objective]) -> List[Objective]:
        """The rows of ``rows`` (the objectives table) this run pre-trains, in order:
        switched on, a positive update count, and (a cold start) the row it starts from
        runs too."""
        on: Dict[str, bool] = {}
        for row in rows:  # a row starts from an earlier one
            on[row.run] = (
                self.switches.get(row.run, not row.quickstart_opt_in)
                and self.updates(row.quickstart_updates) > 0
                and (row.starts_from is None or on.get(row.starts_from, False))
            )
        return [row for row in rows if on[row.run]]


# Flags that must be non-negative integers, checked in this order: the int fields.
INTEGER_FLAGS: Tuple[str, ...] = tuple(
    "--" + f.name.replace("_", "-")
    for f in fields(Config)
    if "group" in f.metadata and get_type_hints(Config)[f.name] is int
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's own errors: one line, exit 1
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


def _switchable() -> List[Tuple[str, str, bool]]:
    """(run, help, on by default) of the table's rows the quickstart can switch: skipped
    with ``--no-<run>`` (``quickstart_switch``) or run with ``--<run>``
    (``quickstart_opt_in``)."""
    out = []
    for row in OBJECTIVES:
        short = row.label.split(" (")[0]
        if row.quickstart_switch or row.quickstart_opt_in:
            on = row.quickstart_switch
            out.append(
                (row.run, f"also pre-train with {row.criterion} and fine-tune from it "
                 f"(the {short} row) [{'on' if on else 'off'}]", on)
            )  # fmt: skip
    return out


def _flags(group: "argparse._ArgumentGroup", *names: str) -> "argparse._ArgumentGroup":
    """Add the :class:`Config` fields ``names`` (default: every field of the section
    ``group``) to ``group`` as flags that read text (:func:`check` converts them)."""
    if not names:
        names = tuple(f.name for f in fields(Config) if f.metadata.get("group") == group.title)
    add_config_flags(group, Config, names, text=True)
    return group


def get_parser() -> argparse.ArgumentParser:
    """:class:`Config`'s fields as flags, by section, and the flags that are not one field
    each: ``--text DIR`` (fairseq's generator sets no metavar), ``--cpu``/``--gpu`` (two
    constants of ``device``), ``--jobs`` (unset, :func:`check` picks it from the device
    and the cores), ``--smoke`` and the table's ``--<run>``/``--no-<run>``."""
    p = _Parser(
        prog=PROG,
        usage="python -m veco_plugin.quickstart [flags]  (or: bash scripts/quickstart.sh)",
        description="The paper's NMT initialization comparison (Table 3 and its learning "
        "curve) at toy scale, end to end on local data.",
        add_help=False,
        allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _flags(p.add_argument_group(PATHS))
    g = p.add_argument_group(CORPUS)
    g.add_argument(
        "--text",
        default="",
        metavar="DIR",
        help="use DIR/{train,valid,test}.{src,tgt} (+ mono.*) instead of gettext",
    )
    _flags(g)
    p.set_defaults(locale_dir=DEFAULT_LOCALE_DIR)  # read now, not when Config was made
    _flags(p.add_argument_group(MODEL))
    g = _flags(p.add_argument_group(PRETRAINING))
    for run, help_text, on in _switchable():
        if not on:  # an opt-in row: in Config.switches only when asked for
            g.add_argument(f"--{run}", dest=f"switch_{run}", action="store_const", const=True,
                           help=help_text)  # fmt: skip
            continue
        g.add_argument(f"--{run}", dest=f"switch_{run}", action="store_true", default=True,
                       help=help_text)  # fmt: skip
        g.add_argument(f"--no-{run}", dest=f"switch_{run}", action="store_false",
                       help=f"skip the --{run} row")  # fmt: skip
    _flags(p.add_argument_group(FINETUNING))
    _flags(p.add_argument_group(EVALUATION))
    _flags(p.add_argument_group(ALIGNMENT))
    g = p.add_argument_group(MACHINE)
    g.add_argument("--cpu", dest="device", action="store_const", const="cpu", default="cpu",
                   help="device [cpu]")  # fmt: skip
    g.add_argument("--gpu", dest="device", action="store_const", const="gpu",
                   help="device, and a GPU-sized run: veco_small, 10000 pre-training and "
                   "3000 fine-tuning updates (GPU_PRESET; later flags win)")  # fmt: skip
    _flags(g, "fp16")
    g.add_argument(
        "--jobs", default=None, help="stages run side by side [2 on CPU with >= 2 cores, else 1]"
    )
    _flags(g, "threads", "workers", "seed", "log_interval")
    g = p.add_argument_group(OTHER)
    g.add_argument(
        "--smoke",
        action="store_true",
        help="tiny everything, for tests: 2000 train pairs, 40 valid/test, vocab 1000, 20 "
        "pre-training and 20 fine-tuning updates (later flags win)",
    )
    _flags(g)
    g.add_argument("-h", "--help", action="help", help="this help")
    return p


def _cores() -> int:
    """CPU cores this process may use (``nproc`` without OMP_NUM_THREADS)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """The flags as text (``--gpu`` sets :data:`GPU_PRESET`, then ``--smoke``
    :data:`SMOKE_PRESET`; explicit flags win); an unknown flag prints the usage and ends
    the run."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = get_parser()
    if "--gpu" in argv:
        parser.set_defaults(**GPU_PRESET)
    if "--smoke" in argv:
        parser.set_defaults(**SMOKE_PRESET)
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        parser.print_usage(sys.stderr)
        parser.exit(1, f"{PROG}: error: unknown flag {unknown[0]}\n")
    return args


def _decoder_depth(spec: str, arch: str) -> int:
    from veco_plugin.models.veco import ARCH_SIZES
    from veco_plugin.nmt_init import parse_decoder_layers

    try:
        return len(parse_decoder_layers(spec, ARCH_SIZES[arch][0]))
    except ValueError as exc:  # NmtInitError: one line naming --decoder-layers
        raise QuickstartError(str(exc)) from None


def check(args: argparse.Namespace, which: Callable[[str], Optional[str]] = shutil.which) -> Config:
    """The checks of every flag, in order; the first problem is a :class:`QuickstartError`.
    ``which`` finds the tools on PATH (a parameter for tests)."""
    from veco_plugin.models.veco import ARCH_SIZES

    ints: Dict[str, int] = {}
    for flag in INTEGER_FLAGS:
        value = getattr(args, flag[2:].replace("-", "_"))
        if not re.fullmatch(r"[0-9]+", value):
            raise QuickstartError(f"{flag} must be a non-negative integer, got '{value}'")
        ints[flag[2:].replace("-", "_")] = int(value)
    if args.arch not in ARCH_SIZES:
        raise QuickstartError(
            f"--arch {args.arch}: choose {', '.join(list(ARCH_SIZES)[:-1])} or "
            f"{list(ARCH_SIZES)[-1]} (veco-init-nmt maps only these sizes)"
        )
    depth = _decoder_depth(args.decoder_layers, args.arch)
    pt, ft, every = ints["pretrain_updates"], ints["finetune_updates"], ints["eval_interval"]
    if not (pt > 0 and ft > 0 and every > 0):
        raise QuickstartError(
            "--pretrain-updates, --finetune-updates and --eval-interval must be > 0"
        )
    if ft % every:
        raise QuickstartError(
            f"--finetune-updates ({ft}) must be a multiple of --eval-interval ({every})"
        )
    if not 1 <= ints["average_last"] <= ft // every:
        raise QuickstartError(f"--average-last must be in 1..{ft // every} (checkpoints saved)")
    if not (ints["max_positions"] >= 16 and ints["max_positions"] % 2 == 0):
        raise QuickstartError("--max-positions must be even and >= 16")
    if args.src == args.tgt:
        raise QuickstartError("--src and --tgt must differ")
    if not os.path.isdir(args.user_dir):
        raise QuickstartError(f"--user-dir {args.user_dir} not found")
    jobs = args.jobs
    if jobs is None:
        jobs = "2" if args.device == "cpu" and _cores() >= 2 else "1"
    if not re.fullmatch(r"[1-9][0-9]*", jobs):
        raise QuickstartError(f"--jobs must be a positive integer, got '{jobs}'")
    for tool in TOOLS:
        if not which(tool):
            raise QuickstartError(f"{tool} not on PATH (activate the venv or: make setup)")
    if not which(args.python):
        raise QuickstartError(f"--python {args.python} not found")
    switches = {
        k[len("switch_") :]: v
        for k, v in vars(args).items()
        if k.startswith("switch_") and v is not None  # an opt-in row not asked for
    }
    flags = {f.name: getattr(args, f.name) for f in fields(Config) if "group" in f.metadata}
    cfg = Config(
        **{**flags, **ints},
        text=args.text,
        device=args.device,
        jobs=int(jobs),
        num_decoder_layers=depth,
        switches=switches,
    )
    _check_word_list(cfg, which)
    return cfg


def _check_word_list(cfg: Config, which: Callable[[str], Optional[str]]) -> None:
    """A row that runs and needs a word list: ``veco-gettext-dictionary`` makes an
    English-X one from the ``--tgt`` catalogs of ``--locale-dir``."""
    rows = [row for row in cfg.pretraining_runs(OBJECTIVES) if WORD_LIST in row.needs]
    if not rows:
        return
    row = rows[0]
    skip = f" (or --no-{row.run})" if row.quickstart_switch else ""
    skip = f" (or drop --{row.run})" if row.quickstart_opt_in else skip
    who = f"the {row.label.split(' (')[0]} row (--criterion {row.criterion})"
    if cfg.src != "en":
        raise QuickstartError(
            f"{who} needs an English-X word list (veco-gettext-dictionary): --src must be "
            f"en, got '{cfg.src}'{skip}"
        )
    catalogs = os.path.join(cfg.locale_dir, cfg.tgt, "LC_MESSAGES")
    if not glob.glob(os.path.join(catalogs, "*.mo")):
        raise QuickstartError(
            f"{who} needs an en-{cfg.tgt} word list from the gettext catalogs, but "
            f"{catalogs} has no *.mo: fix --tgt or --locale-dir{skip}"
        )
    if not which("veco-gettext-dictionary"):
        raise QuickstartError(
            "veco-gettext-dictionary not on PATH (activate the venv or: make setup)"
        )
