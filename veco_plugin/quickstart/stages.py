"""The quickstart's stages as the exact commands they run, and its pipelines.

Which pre-trainings run, which of them are fine-tuned to translation, what starts from
what and what is word-aligned all come from :data:`veco_plugin.objectives.OBJECTIVES`;
the random-initialization baseline (not an objective) is :data:`RANDOM`.

==============  ==========================================================================
corpus          ``veco-gettext-corpus`` (or ``--text``) -> RUN/text
data            ``scripts/prepare-pretraining-data.sh`` (``--align-with eflomal`` when a row
                needs word alignments), the test set encoded with its sentencepiece
                model, ``fairseq-preprocess`` -> RUN/data, RUN/nmt-bin; when a row needs
                a word list, ``veco-gettext-dictionary`` -> RUN/word-list
pretrain-<run>  ``fairseq-train --task veco_pretraining --criterion <criterion>`` (a cold
                start continues the checkpoint of ``starts_from``), then the row's
                ``train_flags``
init-<run>      ``veco-init-nmt``: pre-trained encoder -> veco_transformer checkpoint
finetune-<init> ``fairseq-train --task translation_from_pretrained_veco``, the same flags
                for every initialization
eval-<init>     ``scripts/evaluate-wmt14.sh``: averaged checkpoints, beam search, BLEU
align           ``veco-align`` on the first test pairs, before and after each aligning run
report          ``python -m veco_plugin.quickstart.report`` -> RUN/results.{md,json}, plot
==============  ==========================================================================
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Dict, List, Tuple

from veco_plugin.objectives import NEEDS, OBJECTIVES, WORD_ALIGNMENTS, WORD_LIST, Objective
from veco_plugin.pipeline.runner import Stage
from veco_plugin.pretraining_command import PretrainingCommand

from .options import ROOT, Config

if TYPE_CHECKING:
    from veco_plugin.pipeline.runner import StageContext

RANDOM = "random"
"""The baseline fine-tuned from random initialization (no pre-training)."""
RANDOM_LABEL = "random initialization"


@dataclass(frozen=True)
class Paths:
    run: str

    @property
    def text(self) -> str:
        return f"{self.run}/text"

    @property
    def data(self) -> str:
        return f"{self.run}/data"

    @property
    def nmt_bin(self) -> str:
        return f"{self.run}/nmt-bin"

    @property
    def align(self) -> str:
        return f"{self.run}/align"

    @property
    def word_list(self) -> str:
        """``veco-gettext-dictionary --output``: train.txt, heldout.txt (``{word_list}``)."""
        return f"{self.run}/word-list"

    def placeholders(self) -> Dict[str, str]:
        """What the table's ``train_flags`` placeholders stand for in this run."""
        return {WORD_LIST: self.word_list}


# ------------------------------------------------------------------------ the table


def pretraining_runs(cfg: Config) -> List[Objective]:
    """The table's rows this run pre-trains, in table order (:meth:`Config.pretraining_runs`)."""
    return cfg.pretraining_runs(OBJECTIVES)


def inits(cfg: Config) -> List[str]:
    """The initializations fine-tuned to translation (rows of the BLEU table)."""
    return [row.run for row in pretraining_runs(cfg) if row.translate] + [RANDOM]


def labels() -> Dict[str, str]:
    """Initialization -> its label in the report."""
    return {**{row.run: row.label for row in OBJECTIVES}, RANDOM: RANDOM_LABEL}


def needs(cfg: Config) -> List[str]:
    """What the rows this run pre-trains need beyond the text (:data:`NEEDS` order)."""
    wanted = {need for row in pretraining_runs(cfg) for need in row.needs}
    return [need for need in NEEDS if need in wanted]


def aligned_models(rows: List[Objective]) -> List[str]:
    """The checkpoints the align stage uses: each aligning row's ``starts_from`` (before)
    and the row itself (after), in order, once each."""
    models: List[str] = []
    for row in rows:
        if row.aligns:
            for run in (row.starts_from, row.run):
                if run and run not in models:
                    models.append(run)
    return models


# ------------------------------------------------------------------------ the stages


def _device(cfg: Config) -> List[str]:
    return (["--cpu"] if cfg.device == "cpu" else []) + (["--fp16"] if cfg.fp16 else [])


def corpus(cfg: Config) -> Stage:
    """corpus: gettext (or --text) -> TEXT/{train,valid,test,mono}.{src,tgt}."""
    paths = Paths(cfg.run_dir)

    def make_text(ctx: "StageContext") -> None:
        source = f"{cfg.run_dir}/corpus"
        if cfg.text:
            source = cfg.text
        else:
            ctx.run(
                ["veco-gettext-corpus", "--tgt-lang", cfg.tgt, "--output", source,
                 "--locale-dir", cfg.locale_dir, "--valid-size", str(cfg.valid_size),
                 "--test-size", str(cfg.test_size), "--seed", str(cfg.seed)]
            )  # fmt: skip
        os.makedirs(paths.text, exist_ok=True)
        written = []
        for split in ("train", "valid", "test", "mono"):
            for lang in (cfg.src, cfg.tgt):
                f = f"{source}/{split}.{lang}"
                if not (os.path.isfile(f) and os.path.getsize(f) > 0):
                    if split == "mono":
                        continue
                    raise ValueError(f"missing or empty: {f}")
                out = f"{paths.text}/{split}.{lang}"
                if cfg.max_train_pairs > 0 and split in ("train", "mono"):
                    _head(f, out, cfg.max_train_pairs)
                else:
                    shutil.copyfile(f, out)
                written.append(out)
        if os.path.isfile(f"{source}/catalogs.json"):
            shutil.copyfile(f"{source}/catalogs.json", f"{paths.text}/catalogs.json")
        counts = [(_count_lines(p), p) for p in sorted(written, key=_by_lang(cfg))]
        counts.append((sum(n for n, _ in counts), "total"))
        width = len(str(counts[-1][0]))
        ctx.echo("\n".join(f"{n:>{width}} {p}" for n, p in counts))

    command = ["make_text", cfg.text, cfg.locale_dir, cfg.src, cfg.tgt, str(cfg.valid_size),
               str(cfg.test_size), str(cfg.max_train_pairs), str(cfg.seed)]  # fmt: skip
    return Stage("corpus", command, make_text)


def data(cfg: Config) -> Stage:
    """data: sentencepiece + veco_pretraining DATA + translation NMT_BIN (with test), and
    what the pre-training rows need (:func:`needs`): word alignments binarized with the
    bitext, an En-X word list from the gettext catalogs."""
    from veco_plugin.corpora.subwords import check_max_positions, encode_files

    p, extra = Paths(cfg.run_dir), needs(cfg)

    def make_data(ctx: "StageContext") -> None:
        if WORD_ALIGNMENTS in extra:
            _check_eflomal(cfg.python)
        ctx.run(prepare_command(cfg), env={"PYTHON": cfg.python})
        if WORD_LIST in extra:
            ctx.run(word_list_command(cfg))
        ctx.echo(f"== encoding the test set with {p.data}/spm.model")
        encode_files(
            f"{p.data}/spm.model",
            [(f"{p.text}/test.{lang}", f"{p.data}/text/test.spm.{lang}") for lang in
             (cfg.src, cfg.tgt)],
        )  # fmt: skip
        # Every valid/test sentence (+ <s> and </s>: translation_from_pretrained_veco's
        # source is <s> x </s>) must fit the positions: fairseq-generate refuses longer.
        check_max_positions(
            glob.glob(f"{p.data}/text/valid.spm.*") + glob.glob(f"{p.data}/text/test.spm.*"),
            cfg.max_positions,
        )
        ctx.echo(
            f"== binarizing the translation data (--joined-dictionary --srcdict {p.data}/dict.txt)"
        )
        shutil.rmtree(p.nmt_bin, ignore_errors=True)
        ctx.run(
            ["fairseq-preprocess", "-s", cfg.src, "-t", cfg.tgt, "--joined-dictionary",
             "--srcdict", f"{p.data}/dict.txt", "--trainpref", f"{p.data}/text/train.spm",
             "--validpref", f"{p.data}/text/valid.spm", "--testpref", f"{p.data}/text/test.spm",
             "--destdir", p.nmt_bin, "--workers", str(cfg.workers)]
        )  # fmt: skip
        for split in ("valid", "test"):
            for lang in (cfg.src, cfg.tgt):
                shutil.copyfile(f"{p.text}/{split}.{lang}", f"{p.nmt_bin}/{split}.raw.{lang}")

    command = ["make_data", str(cfg.vocab_size), str(cfg.workers), str(cfg.max_positions)]
    return Stage("data", command + extra, make_data)


def prepare_command(cfg: Config) -> List[str]:
    """The data stage's ``prepare-pretraining-data.sh`` (``--align-with eflomal`` when a
    row needs word alignments)."""
    p = Paths(cfg.run_dir)
    align = ["--align-with", "eflomal"] if WORD_ALIGNMENTS in needs(cfg) else []
    return [
        "bash", f"{ROOT}/scripts/prepare-pretraining-data.sh", "--text", p.text,
        "--out", p.data, "--src", cfg.src, "--tgt", cfg.tgt,
        "--vocab-size", str(cfg.vocab_size), "--workers", str(cfg.workers), *align,
    ]  # fmt: skip


def word_list_command(cfg: Config) -> List[str]:
    """The data stage's ``veco-gettext-dictionary`` (when a row needs a word list):
    RUN/word-list/{train,heldout}.txt, split by English word."""
    return [
        "veco-gettext-dictionary", "--tgt-lang", cfg.tgt, "--output", Paths(cfg.run_dir).word_list,
        "--locale-dir", cfg.locale_dir, "--seed", str(cfg.seed),
    ]  # fmt: skip


def _check_eflomal(python: str) -> None:
    """--align-with eflomal runs in ``python``: one line instead of its traceback."""
    found = subprocess.run([python, "-c", "import eflomal"], capture_output=True).returncode
    if found != 0:
        rows = ", ".join(
            f"--no-{r.run}"
            for r in OBJECTIVES
            if WORD_ALIGNMENTS in r.needs and r.quickstart_switch
        )
        raise ValueError(
            f"word alignments (--align-with eflomal) need the eflomal package in --python "
            f"{python}: pip install eflomal, or skip the rows that need them ({rows})"
        )


def pretrain(cfg: Config, row: Objective) -> Stage:
    """pretrain-<run>: fairseq-train --criterion <criterion>; a cold start continues the
    last checkpoint of ``starts_from`` with fresh optimizer, data order, meters and lr."""
    p, updates = Paths(cfg.run_dir), cfg.updates(row.quickstart_updates)
    cold_start: List[str] = []
    if row.starts_from:
        last = f"{cfg.run_dir}/pretrain/{row.starts_from}/checkpoint_last.pt"
        cold_start = ["--restore-file", last, "--reset-optimizer", "--reset-dataloader",
                      "--reset-meters", "--reset-lr-scheduler"]  # fmt: skip
    command = PretrainingCommand(
        data=p.data,
        save_dir=f"{cfg.run_dir}/pretrain/{row.run}",
        criterion=row.criterion,
        updates=updates,
        warmup=cfg.pretrain_warmup,
        max_tokens=cfg.pretrain_max_tokens,
        max_positions=cfg.max_positions,
        lr=cfg.pretrain_lr,
        user_dir=cfg.user_dir,
        langs=(cfg.src, cfg.tgt),
        arch=f"veco_{cfg.arch}",
        device=tuple(_device(cfg)),
        save_every=min(updates, 500),
        keep_last=1,
        log_interval=cfg.log_interval,
        seed=cfg.seed,
        extra=(*cold_start, *row.train_args(**p.placeholders())),
    ).command()
    return Stage(f"pretrain-{row.run}", command)


def init_nmt(cfg: Config, run: str) -> Stage:
    """init-<run>: the pre-trained encoder -> veco_transformer checkpoint."""
    command = [
        "veco-init-nmt", "--pretrained", f"{cfg.run_dir}/pretrain/{run}/checkpoint_last.pt",
        "--output", f"{cfg.run_dir}/init/{run}.pt", "--arch", f"veco_transformer_{cfg.arch}",
        "--decoder-layers", cfg.decoder_layers, "--dict", f"{cfg.run_dir}/data/dict.txt",
        "--seed", str(cfg.seed),
    ]  # fmt: skip
    return Stage(f"init-{run}", command)


def finetune(cfg: Config, init: str) -> Stage:
    """finetune-<init>: identical flags for every init, plus --finetune-from-model."""
    start = [] if init == RANDOM else ["--finetune-from-model", f"{cfg.run_dir}/init/{init}.pt"]
    command = [
        "fairseq-train", Paths(cfg.run_dir).nmt_bin, "--user-dir", cfg.user_dir,
        "--task", "translation_from_pretrained_veco", "-s", cfg.src, "-t", cfg.tgt,
        "--arch", f"veco_transformer_{cfg.arch}", "--decoder-layers", str(cfg.num_decoder_layers),
        "--max-source-positions", str(cfg.max_positions),
        "--max-target-positions", str(cfg.max_positions),
        *start, *_device(cfg),
        "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
        "--optimizer", "adam", "--adam-betas", "(0.9,0.98)", "--adam-eps", "1e-6",
        "--clip-norm", "1.0",
        "--lr", cfg.finetune_lr, "--lr-scheduler", "inverse_sqrt",
        "--warmup-updates", str(cfg.finetune_warmup),
        "--max-tokens", str(cfg.max_tokens), "--max-update", str(cfg.finetune_updates),
        "--save-dir", f"{cfg.run_dir}/finetune/{init}", "--no-epoch-checkpoints",
        "--save-interval-updates", str(cfg.eval_interval),
        "--keep-interval-updates", str(cfg.average_last),
        "--validate-interval-updates", str(cfg.eval_interval), "--validate-interval", "1000000",
        "--eval-bleu", "--eval-bleu-remove-bpe", "sentencepiece",
        "--eval-bleu-args", '{"beam": 1, "max_len_a": 1.2, "max_len_b": 10}',
        "--log-format", "json", "--log-interval", str(cfg.log_interval),
        "--seed", str(cfg.seed), "--num-workers", "0",
    ]  # fmt: skip
    return Stage(f"finetune-{init}", command)


def evaluate(cfg: Config, init: str) -> Stage:
    """eval-<init>: average -> beam search over every test sentence -> BLEU."""
    p = Paths(cfg.run_dir)
    command = [
        "bash", f"{ROOT}/scripts/evaluate-wmt14.sh",
        "--checkpoint-dir", f"{cfg.run_dir}/finetune/{init}",
        "--num-update-checkpoints", str(cfg.average_last),
        "--data-bin", p.nmt_bin, "--spm-model", f"{p.data}/spm.model",
        "--src", cfg.src, "--tgt", cfg.tgt,
        "--gen-subset", "test", "--beam", str(cfg.beam), "--max-tokens", str(cfg.gen_max_tokens),
        "--user-dir", cfg.user_dir, "--task", "translation_from_pretrained_veco",
        "--out-dir", f"{cfg.run_dir}/eval/{init}", "--python", cfg.python, "--",
        "--max-len-a", "1.2", "--max-len-b", "10", *(["--cpu"] if cfg.device == "cpu" else []),
    ]  # fmt: skip
    return Stage(f"eval-{init}", command)


def align(cfg: Config, models: List[str]) -> Stage:
    """align: the first --align-pairs test pairs, word-aligned with every model."""
    p = Paths(cfg.run_dir)

    def align_words(ctx: "StageContext") -> None:
        os.makedirs(p.align, exist_ok=True)
        for lang in (cfg.src, cfg.tgt):
            _head(f"{p.text}/test.{lang}", f"{p.align}/test.{lang}", cfg.align_pairs)
        for model in models:
            ctx.run(
                ["veco-align", "--path", f"{cfg.run_dir}/pretrain/{model}/checkpoint_last.pt",
                 "--spm-model", f"{p.data}/spm.model", "--dict", f"{p.data}/dict.txt",
                 "--src", f"{p.align}/test.{cfg.src}", "--tgt", f"{p.align}/test.{cfg.tgt}",
                 "--no-progress", "--output", f"{p.align}/{model}.align",
                 *(["--cpu"] if cfg.device == "cpu" else [])]
            )  # fmt: skip

    command = ["align_words", str(cfg.align_pairs), cfg.device, *models]
    return Stage("align", command, align_words)


def report(cfg: Config) -> Stage:
    """report: RUN/results.md (printed), RUN/results.json, RUN/learning_curve.png."""
    command = [
        cfg.python, "-m", "veco_plugin.quickstart.report", "--run-dir", cfg.run_dir,
        "--inits", ",".join(inits(cfg)), "--src", cfg.src, "--tgt", cfg.tgt, "--arch", cfg.arch,
        "--pretrain-updates", str(cfg.pretrain_updates),
        "--finetune-updates", str(cfg.finetune_updates),
        "--eval-interval", str(cfg.eval_interval), "--average-last", str(cfg.average_last),
        "--beam", str(cfg.beam), "--examples", str(cfg.examples),
        "--align-dir", Paths(cfg.run_dir).align,
    ]  # fmt: skip
    return Stage("report", command)


# ------------------------------------------------------------------------ pipelines


def pipelines(cfg: Config) -> List[List[Stage]]:
    """One pipeline per pre-training from scratch (its fine-tuning, then the runs that
    start from it, then the align stage), in table order, then the random baseline."""
    rows = pretraining_runs(cfg)

    def chain(row: Objective) -> List[Stage]:
        stages = [pretrain(cfg, row)]
        if row.translate:
            stages += [init_nmt(cfg, row.run), finetune(cfg, row.run), evaluate(cfg, row.run)]
        for child in rows:
            if child.starts_from == row.run:
                stages += chain(child)
        return stages

    out = []
    for root in rows:
        if root.starts_from is None:
            stages = chain(root)
            members = [r for r in rows if f"pretrain-{r.run}" in {s.name for s in stages}]
            models = aligned_models(members)
            if models:
                stages.append(align(cfg, models))
            out.append(stages)
    out.append([finetune(cfg, RANDOM), evaluate(cfg, RANDOM)])
    return out


def _head(src: str, dst: str, n: int) -> None:
    with open(src, "rb") as f, open(dst, "wb") as o:
        for i, line in enumerate(f):
            if i >= n:
                break
            o.write(line)


def _count_lines(path: str) -> int:
    with open(path, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def _by_lang(cfg: Config) -> Callable[[str], Tuple[bool, str]]:
    """``wc -l TEXT/*.src TEXT/*.tgt`` order: the source files, then the target files,
    each by name."""
    return lambda path: (not path.endswith(f".{cfg.src}"), path)
