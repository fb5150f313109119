"""``veco-derived-transfer``: ALIGN-MLM's controlled transfer experiment (Tang et al.,
Table 3, Table 5, Table 8, Figure 3 / App. E) in one command: English and a derived
language (T_trans, T_trans∘T_inv, T_trans∘T_syn), one model per transformation and
objective (MLM, XLM, DICT-MLM, ALIGN-MLM), POS fine-tuned on English (ZS) and on the
derived language (SUP), the model after the last epoch of each scored on the derived
language's dev file, as the authors' scripts; Δ = SUP − ZS in seqeval F1 (the paper's
POS metric; accuracy beside), the alignment scores of each model (over the vocabulary,
inside and outside the dictionary, after ZS fine-tuning, with language vectors) and the
Spearman correlation of alignment and Δ.

::

    veco-derived-transfer --out runs/derived --text gettext/mono.en \\
        --tagged-train en_ewt-ud-train.conllu --tagged-dev en_ewt-ud-dev.conllu \\
        --tagged-test en_ewt-ud-test.conllu --jobs 2

Budget: the default (``--scale cpu``) is sized for about 70 minutes on 2 CPU cores with
``--jobs 2`` (a 4 x 128 encoder, 2500 updates per model; stage times measured and
extrapolated in examples/derived_transfer/README.md); ``--scale gpu`` (one GPU,
``--jobs 8``: about 11 minutes on an H100) is 6 x 512 in fp16 for 2500 updates of 8192
tokens; ``--smoke`` is a pipeline check (minutes, meaningless numbers). DICT-MLM is the
authors' code-switched input (``--dict-mlm-mode code_switch``); ``--objectives`` also takes
``dict_mlm_syn`` (Chaudhary et al.'s dictionary targets, ``synonym_target``). XLM and
DICT-MLM run with XLM's language embeddings by default (``xlm_lid``, ``dict_mlm_lid``:
``--language-embeddings``, as App. G.3-G.4 and the authors' ``config_dictmlm.json``'s
``num_langs`` run them); ``--objectives`` also takes ``xlm`` and ``dict_mlm``, the two
without. ``--transforms trans_syn`` is the paper's third language (English with French's
order of the dependents of nouns and verbs, then copied): it reads trees, so every
``--text`` and POS file is CoNLL-U and ``--syn-treebank`` gives French treebanks; the rows
set beside it (trans, trans_inv) pre-train on the same parsed text. ``--finetune-recipe
authors`` fine-tunes as the authors (lr 2e-5, 10 epochs, batch 32, 512 positions, the
full English train set); the table's notes name the recipe used.

OUT holds the corpus, the sentencepiece model, the derived languages, every DATA,
checkpoint, score, log (OUT/logs) and stamp (OUT/stamps: a re-run skips finished stages)
and OUT/results.{md,json,png}. Stages: :mod:`veco_plugin.derived_transfer.stages`.
``--merge RUN`` (repeated) writes one table of the models of finished runs measured on one
text (e.g. ``--transforms trans,trans_syn`` in one run, ``trans_inv`` in another):
:mod:`veco_plugin.derived_transfer.merge`.
"""

import argparse
import dataclasses
import glob
import math
import os
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from ..corpora.derived import check_syn_inputs
from ..derived_transfer import curve as regime
from ..derived_transfer import report
from ..derived_transfer import stages as st
from ..derived_transfer.merge import merge
from ..errors import VecoUserError
from ..pipeline.runner import PipelineError, Runner, run_resumable
from ..xtreme.stages import Settings
from .common import check_at_least, run_cli

PROG = "veco-derived-transfer"
TRANSFORMS = ("trans", "trans_inv", "trans_syn")
DEFAULT_TRANSFORMS = ("trans", "trans_inv")
FINETUNE_RECIPES = ("scale", "authors")
AUTHORS_FINETUNE = {"lr": 2e-5, "epochs": 10, "batch_size": 32, "max_length": 512, "train": 0}
"""the ALIGN-MLM authors' POS fine-tuning (Table 11 and their scripts): lr 2e-5, 10 epochs,
batch 32, the tokenizer's 512 positions, the full English train set."""


@dataclass(frozen=True)
class Scale:
    """The defaults of a ``--scale`` (every one a flag)."""

    vocab_size: int
    max_text_lines: int
    pos_train_sentences: int
    valid_lines: int
    updates: int
    warmup: int
    lr: str
    max_tokens: int
    max_positions: int
    arch: str
    size: Tuple[str, ...]
    """encoder-size flags after --arch (each overridden by its own flag)."""
    finetune_lr: float
    finetune_epochs: int
    finetune_batch_size: int


TINY_4x128 = (
    "--encoder-layers",
    "4",
    "--encoder-embed-dim",
    "128",
    "--encoder-ffn-embed-dim",
    "512",
    "--encoder-attention-heads",
    "4",
)
SMALL_6x512 = (
    "--encoder-layers",
    "6",
    "--encoder-embed-dim",
    "512",
    "--encoder-ffn-embed-dim",
    "2048",
    "--encoder-attention-heads",
    "8",
)
SCALES: Dict[str, Scale] = {
    # 2 CPU cores, --jobs 2: about 70 min, extrapolated from measured stage times
    # (examples/derived_transfer/README.md): 8 models x (2500 updates at ~3 updates/s + 2
    # fine-tunings of 3 x 126 updates) / 2 side by side
    "cpu": Scale(4000, 0, 4000, 300, 2500, 250, "1e-3", 4096, 128, "veco_tiny", TINY_4x128,
                 5e-4, 3, 32),
    # one GPU, --jobs 8: about 7 min on an H100 (examples/derived_transfer/README.md):
    # 6 x 512 (the paper's width), 2500 updates of 8192 tokens in fp16 per model; the CPU's
    # POS fine-tuning (4000 sentences, 3 epochs) at a rate for the wider model
    "gpu": Scale(8000, 0, 4000, 1000, 2500, 250, "5e-4", 8192, 128, "veco_small", SMALL_6x512,
                 1e-4, 3, 32),
    # the tests' pipeline check
    "smoke": Scale(300, 300, 60, 20, 8, 2, "1e-3", 1024, 64, "veco_tiny", (), 1e-3, 1, 8),
}  # fmt: skip


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description=__doc__.split("\n\n")[0],
        epilog="Budget: --scale cpu (the default) is sized for about 70 min (under 90) on 2 "
        "CPU cores with --jobs 2: 2 transformations x 4 objectives = 8 pre-trainings of 2500 "
        "updates (4 x 128 encoder, ~3 updates/s each) and 16 POS fine-tunings (3 epochs of "
        "4000 sentences); --scale gpu (--jobs 8, ~11 min on an H100): 6 x 512, 2500 fp16 "
        "updates of 8192 tokens, fine-tuning at lr 1e-4; "
        "--smoke: a pipeline check of minutes (meaningless numbers).\n\n"
        "example: veco-derived-transfer --out runs/derived --text data/gettext/mono.en "
        "--pos data/ewt --jobs 2",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--out", required=True, help="the run directory (a re-run resumes)")
    p.add_argument("--text", action="append", default=[], metavar="FILE",
                   help="English pre-training text, a sentence a line, or CoNLL-U trees "
                   "(*.conllu: their words, a tree a line) (repeat); the POS train sentences "
                   "are always added")  # fmt: skip
    p.add_argument("--pos", metavar="DIR", help="a folder with one *train*, *dev* and *test* "
                   "file (.conllu or word<TAB>tag .tsv); the --tagged-* flags win")  # fmt: skip
    for split in st.POS_SPLITS:
        p.add_argument(f"--tagged-{split}", metavar="FILE", help=f"English POS {split} "
                       "(CoNLL-U *.conllu or word<TAB>tag)")  # fmt: skip
    p.add_argument("--transforms", default=",".join(DEFAULT_TRANSFORMS),
                   help=f"comma-separated, of {', '.join(TRANSFORMS)}: trans a copy of every "
                   "piece, trans_inv each sentence's words reversed then copied, trans_syn "
                   "the dependents of every noun and verb re-ordered as French orders them "
                   "(Wang & Eisner 2016; needs trees: every --text and POS file CoNLL-U, and "
                   "--syn-treebank) then copied [%(default)s]")  # fmt: skip
    p.add_argument("--syn-treebank", action="append", default=[], metavar="FILE",
                   help="French CoNLL-U treebank T_syn's ordering model is trained on "
                   "(repeat; with trans_syn)")  # fmt: skip
    p.add_argument("--merge", action="append", default=[], metavar="RUN",
                   help="the --out of a finished run (repeat): their models in one table, plot "
                   "and ρ in --out, nothing trained (rows measured in separate runs on one "
                   "text, dictionary draw and settings; else refused)")  # fmt: skip
    p.add_argument("--objectives", default=",".join(st.DEFAULT_OBJECTIVES),
                   help=f"comma-separated, of {', '.join(st.OBJECTIVES)} "
                   "[%(default)s]")  # fmt: skip
    p.add_argument("--dictionary-coverage", type=float, default=0.25,
                   help="share of the tokens in the bilingual dictionary (DICT-MLM, "
                   "ALIGN-MLM), drawn uniformly [%(default)s]")  # fmt: skip
    p.add_argument("--seed", type=int, default=1, help="every draw and training [%(default)s]")
    p.add_argument("--scale", choices=("cpu", "gpu"), default="cpu",
                   help="the defaults below: cpu (2 cores, ~70 min) or gpu (one GPU, "
                   "--jobs 8, ~11 min) [%(default)s]")  # fmt: skip
    p.add_argument("--smoke", action="store_true", help="tiny everything (a pipeline check)")
    p.add_argument("--jobs", type=int, default=2, help="models side by side [%(default)s]")
    g = p.add_argument_group("data (default: the --scale's)")
    g.add_argument("--spm-model", help="English sentencepiece model (default: trained on the text)")
    g.add_argument("--vocab-size", type=int, help="pieces of the trained model (cpu 4000)")
    g.add_argument("--max-text-lines", type=int, help="--text lines used, 0: all (cpu: all)")
    g.add_argument(
        "--pos-train-sentences",
        type=int,
        help="POS train sentences fine-tuned on, 0: all (cpu 4000; pre-training reads all)",
    )
    g.add_argument("--valid-lines", type=int, help="pre-training valid lines (cpu 300)")
    g.add_argument("--tlm-share", type=float, default=0.25,
                   help="XLM's TLM pairs: share of MLM's train lines [%(default)s]")  # fmt: skip
    g = p.add_argument_group("pre-training (default: the --scale's)")
    g.add_argument("--updates", type=int, help="updates per model (cpu and gpu 2500)")
    g.add_argument(
        "--curve",
        metavar="UPDATES",
        help="a regime curve instead of --updates: ascending comma-separated budgets, each "
        "a multiple of 50 (e.g. 1000,2500,5000,10000,20000); each model is pre-trained once "
        "to the last and the model at every budget fine-tuned and scored (it is the run of "
        "that many updates: inverse-sqrt decay); OUT/curve.{md,json,png}: Δ and alignment "
        "against tokens seen",
    )
    g.add_argument("--warmup", type=int, help="inverse-sqrt warm-up updates (cpu 250)")
    g.add_argument("--lr", help="peak learning rate (cpu 1e-3)")
    g.add_argument("--alpha", type=float,
                   help="ALIGN-MLM's α, the weight of L_ALIGN (--align-weight; paper and "
                   "default: 10)")  # fmt: skip
    g.add_argument("--max-tokens", type=int, help="tokens per update (cpu 4096)")
    g.add_argument("--max-positions", type=int, help="tokens per segment (cpu 128)")
    g.add_argument(
        "--arch",
        help="veco arch (cpu veco_tiny at 4 x 128, FFN 512, 4 heads; gpu veco_small at 6 x 512, "
        "FFN 2048, 8 heads)",
    )
    for flag in ("layers", "embed-dim", "ffn-embed-dim", "attention-heads"):
        g.add_argument(f"--encoder-{flag}", type=int, help="overrides the --scale's and the arch's")
    g = p.add_argument_group("POS fine-tuning (paper, Table 11: lr 2e-5, 10 epochs, batch 32)")
    g.add_argument("--finetune-recipe", choices=FINETUNE_RECIPES, default="scale",
                   help="scale: the --scale's (below); authors: the ALIGN-MLM authors' (lr "
                   "2e-5, 10 epochs, batch 32, 512 positions, the full English train set); "
                   "the flags below override either [%(default)s]")  # fmt: skip
    g.add_argument("--finetune-lr", type=float, help="(cpu 5e-4: a tiny model needs more)")
    g.add_argument("--finetune-epochs", type=int, help="(cpu 3)")
    g.add_argument("--finetune-batch-size", type=int, help="(32)")
    g.add_argument("--max-length", type=int, help="window positions (scale 128, authors 512)")
    return p


def _listed(value: str, choices: Sequence[str], flag: str) -> Tuple[str, ...]:
    named = tuple(x.strip() for x in value.split(","))
    for name in named:
        if name not in choices:
            extra = ""
            if flag == "--transforms" and name == "inv":
                extra = " (T_inv alone has no copies: no dictionary, no alignment score)"
            raise VecoUserError(
                f"{flag} {value}: unknown {name!r}{extra}: give comma-separated names of "
                f"{', '.join(choices)}"
            )
    if len(set(named)) != len(named):
        raise VecoUserError(f"{flag} {value}: a name given twice")
    return named


def tagged_files(args: argparse.Namespace) -> Dict[str, str]:
    """train/dev/test -> the file: --tagged-*, completed from --pos DIR."""
    files: Dict[str, str] = {}
    for split in st.POS_SPLITS:
        given = getattr(args, f"tagged_{split}")
        if given is None and args.pos:
            if not os.path.isdir(args.pos):
                raise VecoUserError(f"--pos {args.pos}: no such directory")
            found = [
                f
                for f in sorted(glob.glob(os.path.join(glob.escape(args.pos), f"*{split}*")))
                if f.endswith((".conllu", ".tsv"))
            ]
            if len(found) != 1:
                raise VecoUserError(
                    f"--pos {args.pos}: {len(found)} *{split}*.conllu/.tsv files: give "
                    f"--tagged-{split} FILE"
                )
            given = found[0]
        if given is None:
            raise VecoUserError(f"--tagged-{split} FILE (or --pos DIR) is needed: English POS")
        if not os.path.isfile(given):
            raise VecoUserError(f"--tagged-{split} {given}: no such file")
        files[split] = given
    return files


def _pick(value, default):
    return default if value is None else value


def config_from(args: argparse.Namespace) -> st.Config:
    """The one place where the flags become a checked :class:`Config`; bad input fails
    here, before any stage."""
    import torch

    from ..corpora.tagging import read_tagged

    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise VecoUserError(f"--out {args.out} is a file: give a run directory (new, or to resume)")
    scale = SCALES["smoke" if args.smoke else args.scale]
    gpu = args.scale == "gpu" and not args.smoke
    if gpu and not torch.cuda.is_available():
        raise VecoUserError("--scale gpu: no CUDA device here: leave --scale out (cpu)")
    for path in args.text:
        if not os.path.isfile(path):
            raise VecoUserError(f"--text {path}: no such file")
        if os.path.getsize(path) == 0:
            raise VecoUserError(f"--text {path}: an empty file: give English text, a line each")
    tagged = tagged_files(args)
    for split, path in tagged.items():
        if not read_tagged([path]):  # a malformed file is one line naming its line
            raise VecoUserError(f"--tagged-{split} {path}: no sentences")
    if args.spm_model and not os.path.isfile(args.spm_model):
        raise VecoUserError(f"--spm-model {args.spm_model}: no such file")
    if not 0 < args.dictionary_coverage <= 1:
        raise VecoUserError(
            f"--dictionary-coverage {args.dictionary_coverage}: give a fraction in (0, 1]"
        )
    if not 0 <= args.tlm_share <= 1:
        raise VecoUserError(f"--tlm-share {args.tlm_share}: give a fraction in [0, 1]")
    if args.alpha is not None and not (math.isfinite(args.alpha) and args.alpha >= 0):
        raise VecoUserError(f"--alpha {args.alpha}: ALIGN-MLM's weight, a finite number >= 0")
    for flag in ("jobs", "updates", "vocab_size", "valid_lines", "max_tokens", "finetune_epochs",
                 "finetune_batch_size", "encoder_layers", "encoder_embed_dim",
                 "encoder_ffn_embed_dim", "encoder_attention_heads"):  # fmt: skip
        check_at_least(getattr(args, flag), f"--{flag.replace('_', '-')}")
    for flag in ("max_text_lines", "pos_train_sentences", "warmup"):
        check_at_least(getattr(args, flag), f"--{flag.replace('_', '-')}", 0)
    check_at_least(args.max_positions, "--max-positions", 8)
    curve = budgets(args.curve, args.updates)
    authors = args.finetune_recipe == "authors"
    max_length = _pick(args.max_length, AUTHORS_FINETUNE["max_length"] if authors else 128)
    check_at_least(max_length, "--max-length", 3)
    syn = "trans_syn" in _listed(args.transforms, TRANSFORMS, "--transforms")
    if syn:
        check_syn_inputs(args.text, list(tagged.values()), args.syn_treebank)
    size: List[str] = []
    arch = _pick(args.arch, scale.arch)
    defaults = dict(zip(scale.size[::2], scale.size[1::2])) if arch == scale.arch else {}
    for flag in ("layers", "embed-dim", "ffn-embed-dim", "attention-heads"):
        value = _pick(getattr(args, f"encoder_{flag.replace('-', '_')}"),
                      defaults.get(f"--encoder-{flag}"))  # fmt: skip
        if value is not None:
            size += [f"--encoder-{flag}", str(value)]
    gpus = 1 if gpu else 0
    recipe = AUTHORS_FINETUNE if authors else {
        "lr": scale.finetune_lr, "epochs": scale.finetune_epochs,
        "batch_size": scale.finetune_batch_size, "train": scale.pos_train_sentences,
    }  # fmt: skip
    finetune = Settings(
        lr=_pick(args.finetune_lr, recipe["lr"]),
        epochs=_pick(args.finetune_epochs, int(recipe["epochs"])),
        max_length=max_length,
        max_question=0,
        doc_stride=0,
        batch_size=_pick(args.finetune_batch_size, int(recipe["batch_size"])),
        update_freq=1,
        warmup_updates=0,
        weight_decay=0.0,
        seed=args.seed,
        dropout=0.1,
        cpu=not gpu,
        gpus=gpus,
    )
    return st.Config(
        out=args.out,
        texts=tuple(args.text),
        tagged=tagged,
        transforms=_listed(args.transforms, TRANSFORMS, "--transforms"),
        objectives=_listed(args.objectives, tuple(st.OBJECTIVES), "--objectives"),
        coverage=args.dictionary_coverage,
        seed=args.seed,
        spm_model=args.spm_model,
        vocab_size=_pick(args.vocab_size, scale.vocab_size),
        max_text_lines=_pick(args.max_text_lines, scale.max_text_lines),
        max_pos_train=_pick(args.pos_train_sentences, int(recipe["train"])),
        valid_lines=_pick(args.valid_lines, scale.valid_lines),
        tlm_share=args.tlm_share,
        alpha=args.alpha,
        updates=curve[-1] if curve else _pick(args.updates, scale.updates),
        warmup=_pick(args.warmup, scale.warmup),
        lr=_pick(args.lr, scale.lr),
        max_tokens=_pick(args.max_tokens, scale.max_tokens),
        max_positions=_pick(args.max_positions, scale.max_positions),
        arch=arch,
        size=tuple(size),
        device=("--fp16",) if gpu else ("--cpu",),
        finetune=finetune,
        syn_treebanks=tuple(args.syn_treebank) if syn else (),
        curve=curve,
    )


def budgets(value: Optional[str], updates: Optional[int]) -> Tuple[int, ...]:
    """``--curve``'s budgets, checked (empty without the flag)."""
    if value is None:
        return ()
    if updates is not None:
        raise VecoUserError(f"--curve {value} with --updates {updates}: give one of the two")
    try:
        counts = tuple(int(x) for x in value.split(","))
    except ValueError:
        counts = ()
    ascending = all(a < b for a, b in zip(counts, counts[1:]))
    if not counts or not ascending or any(c <= 0 or c % regime.LOG_INTERVAL for c in counts):
        raise VecoUserError(
            f"--curve {value}: give ascending update counts, each a positive multiple of "
            f"{regime.LOG_INTERVAL}, comma-separated (e.g. 1000,2500,5000,10000)"
        )
    return counts


NOTES = (
    "POS: seqeval F1 (accuracy's Δ beside), SUP and ZS each the model after the last "
    "fine-tuning epoch (no model selection) scored on the derived language's dev file, as "
    "the ALIGN-MLM authors' scripts",
    "DICT-MLM: code-switched inputs (the authors' collator); DICT-MLM (syn. target): "
    "Chaudhary et al.'s dictionary targets",
    "language IDs: XLM and DICT-MLM (no +LID) run without; XLM+LID and DICT-MLM+LID add XLM's "
    "language embeddings (App. G.3-G.4) to every non-special token (its language is the "
    "token's own: the two vocabularies are disjoint; specials and <mask> get none; a "
    "code-switched token carries its translation's language)",
    "alignment (§5, Table 8): over every non-special English token with a copy, every copy "
    "a candidate; split into the dictionary's English tokens and the others; after ZS "
    "fine-tuning: the English-tuned model's embeddings; with language vectors: rows plus "
    "their language's vector on a random 40 % of the English tokens (the authors' "
    "compute_alignment_with_lang_ids.py), beside the token rows on the same 40 %",
)


def cell(
    cfg: st.Config, transform: str, objective: str, updates: Optional[int] = None
) -> report.Cell:
    """One model's scores, read from its finished stages (``updates``: the model at a
    curve's budget, its label naming it)."""
    sup = st.pos_scores(cfg, transform, objective, st.DERIVED, updates)
    zs = st.pos_scores(cfg, transform, objective, "en", updates)
    pretrained = st.read_alignment(cfg, transform, objective, updates=updates)
    tuned = st.read_alignment(cfg, transform, objective, tuned=True, updates=updates)
    label = st.OBJECTIVES[objective].label

    def optional(key: str) -> Optional[float]:
        return pretrained[key]["score"] if key in pretrained else None

    return report.Cell(
        transform=transform,
        objective=objective,
        label=label if updates is None else f"{label} @ {updates}",
        sup=sup["f1"],
        zs=zs["f1"],
        alignment=pretrained["score"],
        sup_accuracy=sup["accuracy"],
        zs_accuracy=zs["accuracy"],
        alignment_dictionary=pretrained["dictionary"]["score"],
        alignment_outside=pretrained["outside"]["score"],
        alignment_tuned=tuned["score"],
        alignment_languages=optional("languages"),
        alignment_sampled=optional("sampled_rows"),
    )


def curve_points(cfg: st.Config) -> List[regime.Point]:
    """The regime curve: every model at every budget, with the tokens it had seen."""
    points = []
    for t in cfg.transforms:
        for o in cfg.objectives:
            log = cfg.path("logs", f"pretrain-{st.model_name(t, o)}.log")
            progress = regime.read_progress(log) if os.path.isfile(log) else {}
            for b in cfg.curve:
                c = cell(cfg, t, o, b)
                c = dataclasses.replace(c, label=st.OBJECTIVES[o].label)
                points.append(regime.Point(b, c, progress.get(b)))
    return points


def recipe_note(cfg: st.Config) -> str:
    """The POS fine-tuning used, beside the authors'."""
    s = cfg.finetune
    epochs = f"{s.epochs} epoch{'s' if s.epochs != 1 else ''}"
    ours = (f"lr {s.lr:g}, {epochs}, batch {s.batch_size}, {s.max_length} positions, "
            f"{cfg.max_pos_train or 'all'} English train sentences")  # fmt: skip
    theirs = "lr 2e-05, 10 epochs, batch 32, 512 positions, all English train sentences"
    same = " (the authors')" if ours == theirs else f"; the authors': {theirs}"
    return f"POS fine-tuning: {ours}{same}"


def results(cfg: st.Config) -> str:
    """OUT/results.{md,json,png} of every model (with a curve: at its last budget, ρ over
    models, not over one model's budgets), and with a curve OUT/curve.{md,json,png}."""
    last = cfg.curve[-1] if cfg.curve else None
    cells = [cell(cfg, t, o, last) for t in cfg.transforms for o in cfg.objectives]
    about = {
        "settings": {
            "updates": cfg.updates, "arch": cfg.arch, "size": list(cfg.size),
            "max_tokens": cfg.max_tokens, "lr": cfg.lr, "dictionary_coverage": cfg.coverage,
            "alpha": 10.0 if cfg.alpha is None else cfg.alpha,
            "finetune_lr": cfg.finetune.lr, "finetune_epochs": cfg.finetune.epochs,
            "finetune_batch_size": cfg.finetune.batch_size, "seed": cfg.seed,
        },
    }  # fmt: skip
    if cfg.curve:
        about["settings"]["curve"] = list(cfg.curve)
    text = report.write(cfg.out, cells, about, NOTES + (recipe_note(cfg),))
    if cfg.curve:
        notes = (NOTES[0], NOTES[3], CURVE_NOTE)
        text += "\n" + regime.write(cfg.out, curve_points(cfg), about, notes)
    return text


CURVE_NOTE = (
    "curve: each model pre-trained once; the model at B updates is the B-update run's "
    "(inverse-sqrt decay, every update seeded by its number); tokens seen: fairseq's "
    "logged tokens per update (wpb) summed; passes: fairseq's epochs over the "
    "pre-training data (both languages' text)"
)


def main(args: argparse.Namespace) -> int:
    if args.merge:
        given = [f for f in ("text", "pos", "syn_treebank") if getattr(args, f)]
        if given:
            flag = "--" + given[0].replace("_", "-")
            raise VecoUserError(f"--merge reads finished runs: leave out {flag}")
        print(merge(args.out, args.merge))
        print(f"== written: {args.out}/results.md, results.json, results.png")
        return 0
    cfg = config_from(args)
    # the side-by-side jobs share the cores: torch's threads divided among them
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (cores or 1) // args.jobs)))
    models = len(cfg.transforms) * len(cfg.objectives)
    budgets = f"; each at {', '.join(map(str, cfg.curve))} updates" if cfg.curve else ""
    print(f"== {PROG}: {models} model(s) ({', '.join(cfg.transforms)} x "
          f"{', '.join(cfg.objectives)}{budgets}), results in {cfg.out}")  # fmt: skip

    def work(runner: Runner) -> None:
        runner.run_pipeline(st.shared_stages(cfg))
        runner.run_pipelines(st.pipelines(cfg))

    status = run_resumable(cfg.out, args.jobs, PROG, work)
    if status:
        return status
    print("\n" + results(cfg))
    curve = ", curve.md, curve.json, curve.png" if cfg.curve else ""
    print(f"== written: {cfg.out}/results.md, results.json, results.png{curve}")
    return 0


def cli_main(argv: Optional[Sequence[str]] = None) -> None:
    status: List[int] = []
    run_cli(PROG, get_parser, lambda a: status.append(main(a)), PipelineError, argv)
    raise SystemExit(status[0] if status else 0)


if __name__ == "__main__":
    cli_main()
