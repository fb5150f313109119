"""``veco-derived-transfer``'s stages: the exact commands, stamped under OUT/stamps.

=========================  ================================================================
corpus                     the pre-training text (``--text`` files, then the words of every
                           POS train sentence, a line each) -> OUT/corpus/text.txt; the
                           tagged train (the first ``--pos-train-sentences``), dev and test
                           as TSV -> OUT/corpus/pos-{train,dev,test}.tsv; with T_syn the
                           trees too: text.conllu, pos-{train,dev,test}.conllu
spm                        ``veco-spm train`` on it -> OUT/spm.model (or ``--spm-model``)
derive                     ``veco-derive-language`` -> OUT/derived (en/, <transform>/,
                           dict.txt: English + copies, bilingual.txt: the dictionary)
data-<t>                   the pieces split (valid: the last lines), TLM pairs drawn,
                           ``fairseq-preprocess --only-source --srcdict dict.txt`` ->
                           OUT/data/<t>/mono/{en,der}, bi/en-der (veco_pretraining's DATA)
prepare-<t>-{en,der}       ``veco-prepare-tagging``: English / derived POS train and dev
                           -> OUT/pos/<t>-{en,der}/data
pretrain-<t>-<o>           ``fairseq-train --task veco_pretraining`` with objective <o>
                           (saves every 500 updates; a re-run continues it); with
                           ``--curve``, continued to each budget B in turn, the model at B
                           kept as checkpoint_uB.pt
align-<t>-<o>              the alignment scores of its embeddings -> .../alignment.json
finetune-<t>-<o>-{zs,sup}  ``fairseq-train --task veco_tagging`` from it on English (ZS) or
                           the derived language (SUP), the model after the last epoch kept
align-<t>-<o>-zs           the alignment scores of the ZS fine-tuned model's embeddings
                           -> OUT/pos/<t>-<o>-zs/alignment.json
test-<t>-<o>-{zs,sup}      ``veco-tag-eval`` on the derived **dev** file -> scores.json
                           (seqeval F1 and accuracy)
=========================  ================================================================

With ``--curve`` every model's stages after pretrain are repeated per budget B, named
<t>-<o>-uB (align-trans-mlm-u5000, ...): the regime curve.

One pipeline per model (pretrain .. test), after the shared stages; the pipelines run side
by side on ``--jobs`` slots (:mod:`..pipeline.runner`). The fine-tuning and test
commands are ``veco-xtreme``'s (:mod:`..xtreme.stages`), its udpos recipe with the ALIGN-MLM
authors' choices made explicit (:data:`RECIPE`).
"""

import dataclasses
import json
import os
import random
import shutil
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from ..corpora.derived import DICT_FILE, ENGLISH, MARKER, PAIRS_FILE, SYN, TRANSFORMS
from ..corpora.tagging import conllu_rows, format_tagged_tsv, read_tagged
from ..pipeline.runner import Stage, StageFailed
from ..pretraining_command import USER_DIR, PretrainingCommand
from ..xtreme import stages as xtreme
from ..xtreme.models import Pretrained
from ..xtreme.recipes import RECIPES
from .alignment_score import score_checkpoint
from .curve import LOG_INTERVAL

if TYPE_CHECKING:
    from ..pipeline.runner import StageContext

RECIPE = dataclasses.replace(RECIPES["udpos"], keep="last", validate_updates=0)
"""POS fine-tuning as the ALIGN-MLM authors' scripts run it, whatever veco-xtreme's XTREME
defaults are: no model selection, the model after the last epoch (their ``--save_steps
-1`` and no best-model reload), scored on the derived language's dev file (their
``--do_eval --validation_file dev_*_inv.json``: ZS the English-tuned model on it, SUP the
derived-tuned one); seqeval F1 the metric, accuracy beside."""
DERIVED = "der"  # the derived language's code in DATA (mono/der, bi/en-der)
POS_SPLITS = ("train", "dev", "test")
TEXT = "text.txt"
TREES = "text.conllu"
"""with T_syn, the pre-training text's trees (``derive`` reads them, writes text.txt)."""
LANGUAGES = "languages.txt"
"""each token's language (``--token-languages``), in OUT/data/<t>."""
SAVE_EVERY = 500
"""a pre-training saves checkpoint_last.pt every this many updates: an interrupted run
loses at most these (a re-run continues it)."""


@dataclass(frozen=True)
class Objective:
    """One column of the paper's comparison: the criterion and what it is given."""

    name: str
    label: str
    criterion: str
    flags: Tuple[str, ...]
    """fairseq-train flags; ``{dictionary}`` stands for OUT/derived/bilingual.txt."""
    pairs: bool
    """trains on the En-derived sentence pairs too (TLM)."""
    languages: bool = False
    """XLM's language embeddings (``--language-embeddings 2``, App. G.3-G.4)."""


DICTIONARY = ("--align-dictionary", "{dictionary}", "--align-dictionary-pieces")
"""DICT-MLM's and ALIGN-MLM's flags: the bilingual dictionary, token pairs."""
CODE_SWITCH = DICTIONARY + ("--dict-mlm-mode", "code_switch")
"""DICT-MLM as the ALIGN-MLM authors ran it: code-switched inputs."""
SYNONYM = DICTIONARY + ("--dict-mlm-mode", "synonym_target")
"""DICT-MLM as Chaudhary et al. define it: masked inputs, dictionary targets."""

OBJECTIVES: Dict[str, Objective] = {
    o.name: o
    for o in (
        Objective("mlm", "MLM", "veco_terms", ("--terms", "mono_mlm=1"), pairs=False),
        Objective("xlm", "XLM", "tlm", (), pairs=True),
        Objective("dict_mlm", "DICT-MLM", "dict_mlm", CODE_SWITCH, pairs=False),
        Objective("dict_mlm_syn", "DICT-MLM (syn. target)", "dict_mlm", SYNONYM, pairs=False),
        Objective("xlm_lid", "XLM+LID", "tlm", (), pairs=True, languages=True),
        Objective(
            "dict_mlm_lid", "DICT-MLM+LID", "dict_mlm", CODE_SWITCH, pairs=False, languages=True
        ),
        Objective("align_mlm", "ALIGN-MLM", "align_mlm", DICTIONARY, pairs=False),
    )
}


LANGUAGE_FLAGS = ("--language-embeddings", "2")  # en, der: --mono-langs' order


DEFAULT_OBJECTIVES = ("mlm", "xlm_lid", "dict_mlm_lid", "align_mlm")
"""``--objectives``' default: the paper's four as its authors ran them: XLM and DICT-MLM
with language embeddings (App. G.3-G.4; ``config_dictmlm.json``'s ``num_langs``), DICT-MLM
code-switched; ``xlm`` and ``dict_mlm`` are the two without, ``dict_mlm_syn`` DICT-MLM
with Chaudhary et al.'s dictionary targets."""


@dataclass(frozen=True)
class Config:
    """Everything the stages need: the flags, checked (``veco_plugin.cli.derived_transfer``)."""

    out: str
    texts: Tuple[str, ...]
    tagged: Dict[str, str]
    """``train``/``dev``/``test`` -> the English tagged file."""
    transforms: Tuple[str, ...]
    objectives: Tuple[str, ...]
    coverage: float
    seed: int
    spm_model: Optional[str]
    vocab_size: int
    max_text_lines: int
    """pre-training text lines taken from ``--text`` (0: all)."""
    max_pos_train: int
    """POS train sentences fine-tuned on (0: all; pre-training reads all)."""
    valid_lines: int
    tlm_share: float
    alpha: Optional[float]
    """ALIGN-MLM's ``--align-weight`` (None: the criterion's, the paper's 10)."""
    # pre-training
    updates: int
    """the pre-training's updates (with ``curve``: its last budget)."""
    warmup: int
    lr: str
    max_tokens: int
    max_positions: int
    arch: str
    size: Tuple[str, ...]
    device: Tuple[str, ...]
    # fine-tuning (veco-xtreme's Settings)
    finetune: xtreme.Settings
    workers: int = 1
    syn_treebanks: Tuple[str, ...] = ()
    """the French treebanks T_syn's ordering model is trained on."""
    curve: Tuple[int, ...] = ()
    """a regime curve's budgets (ascending updates; the last is ``updates``): each model is
    pre-trained once and the model at every budget fine-tuned and scored; empty: the
    model after ``updates`` alone."""

    @property
    def budgets(self) -> Tuple[Optional[int], ...]:
        """The pre-training budgets scored per model: the curve's, or (None,) for the model
        after ``updates``."""
        return self.curve or (None,)

    @property
    def python(self) -> List[str]:
        return [sys.executable, "-m"]

    @property
    def model_positions(self) -> int:
        """The model's ``--max-positions``: a pre-training segment and a POS window fit."""
        return max(self.max_positions, self.finetune.max_length)

    @property
    def syn(self) -> bool:
        """T_syn among the transformations: every text and POS file is read as trees."""
        return any(TRANSFORMS[t][0] == SYN for t in self.transforms)

    def path(self, *parts: str) -> str:
        return os.path.join(self.out, *parts)

    @property
    def spm(self) -> str:
        return self.spm_model or self.path("spm.model")

    @property
    def joint_dict(self) -> str:
        return self.path("derived", DICT_FILE)

    def pos_file(self, lang: str, split: str, transform: str) -> str:
        """A derived POS file: ``lang`` en (the English side) or der (``transform``'s)."""
        return self.path("derived", ENGLISH if lang == ENGLISH else transform, f"pos-{split}.tsv")

    def pretrain_dir(self, transform: str, objective: str) -> str:
        return self.path("pretrain", f"{transform}-{objective}")


def model_name(transform: str, objective: str, updates: Optional[int] = None) -> str:
    """<t>-<o>, or <t>-<o>-u<updates> for the model at a curve's budget."""
    return f"{transform}-{objective}" + ("" if updates is None else f"-u{updates}")


# ------------------------------------------------------------------------- shared stages


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".part", "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    os.replace(path + ".part", path)


def conllu_blocks(path: str) -> List[str]:
    """Each sentence of CoNLL-U file ``path`` as its token lines and a blank line (the
    sentences :func:`read_tagged` keeps, in order, and only those)."""
    from ..corpora.ud_xtreme import conllu_language, xtreme_words

    lang = conllu_language(path)
    return [
        "".join("\t".join(r) + "\n" for r in rows) + "\n"
        for _, rows in conllu_rows(path)
        if xtreme_words(rows, lang) is not None
    ]


def corpus(cfg: Config) -> Stage:
    def body(ctx: "StageContext") -> None:
        lines: List[str] = []
        trees: List[str] = []  # with T_syn: each line's tree
        for path in cfg.texts:
            if path.endswith(".conllu"):  # with T_syn or not: the trees' words, a line each
                trees += conllu_blocks(path) if cfg.syn else []
                lines += [" ".join(s.words) for s in read_tagged([path])]
                continue
            with open(path, encoding="utf-8") as f:
                lines += [" ".join(x.split()) for x in f]
        lines = [x for x in lines if x]
        if cfg.max_text_lines:
            lines, trees = lines[: cfg.max_text_lines], trees[: cfg.max_text_lines]
        from_text = len(lines)
        for split in POS_SPLITS:
            sentences = read_tagged([cfg.tagged[split]])
            blocks = conllu_blocks(cfg.tagged[split]) if cfg.syn else []
            if split == "train":  # all of them pre-train, the first max_pos_train fine-tune
                lines += [" ".join(s.words) for s in sentences]
                trees += blocks
                sentences = sentences[: cfg.max_pos_train or None]
                blocks = blocks[: cfg.max_pos_train or None]
            _write(cfg.path("corpus", f"pos-{split}.tsv"), format_tagged_tsv(sentences))
            if cfg.syn:
                _write(cfg.path("corpus", f"pos-{split}.conllu"), "".join(blocks))
            ctx.echo(f"pos-{split}: {len(sentences)} sentences from {cfg.tagged[split]}")
        _write(cfg.path("corpus", TEXT), "".join(x + "\n" for x in lines))
        if cfg.syn:
            _write(cfg.path("corpus", TREES), "".join(trees))
        words = sum(len(x.split()) for x in lines)
        ctx.echo(
            f"{TEXT}: {len(lines)} lines ({from_text} from --text, {len(lines) - from_text} "
            f"POS train sentences), {words} words"
        )

    command = ["corpus", *cfg.texts, *(cfg.tagged[s] for s in POS_SPLITS)]
    command += [str(cfg.max_text_lines), str(cfg.max_pos_train)] + (["trees"] if cfg.syn else [])
    return Stage("corpus", command, body)


def spm(cfg: Config) -> Stage:
    command = cfg.python + ["veco_plugin.cli.spm", "train", "--model-prefix", cfg.path("spm")]
    command += ["--vocab-size", str(cfg.vocab_size), cfg.path("corpus", TEXT)]
    return Stage("spm", command)


def derive(cfg: Config) -> Stage:
    command = cfg.python + ["veco_plugin.cli.derive_language", "--spm-model", cfg.spm]
    command += [
        "--output",
        cfg.path("derived"),
        "--text",
        cfg.path("corpus", TREES if cfg.syn else TEXT),
    ]
    for split in POS_SPLITS:
        command += ["--tagged", cfg.path("corpus", f"pos-{split}.{'conllu' if cfg.syn else 'tsv'}")]
    for path in cfg.syn_treebanks if cfg.syn else ():
        command += ["--syn-treebank", path]
    command += ["--transforms", ",".join(cfg.transforms)]
    command += ["--dictionary-coverage", str(cfg.coverage), "--seed", str(cfg.seed)]
    return Stage("derive", command, body=xtreme.fresh(cfg.path("derived")))


def split_lines(count: int, valid: int, share: float, seed: int) -> Tuple[range, range, List[int]]:
    """Line numbers of the train and valid splits (valid: the last ``valid`` lines, at
    most half) and the TLM pairs: ``round(share * train)`` train lines drawn uniformly
    with ``seed``, in order (App. G.3: TLM data 25 % of MLM's)."""
    valid = min(valid, count // 2)
    train = range(count - valid)
    pairs = sorted(random.Random(seed).sample(train, round(share * len(train))))
    return train, range(count - valid, count), pairs


def token_languages(joint_dict: str) -> str:
    """``--token-languages``' lines for the joint ``dict.txt``: a derived copy (its
    first character the marker) is ``der``'s, every other token English."""
    with open(joint_dict, encoding="utf-8") as f:
        tokens = [line.split()[0] for line in f if line.strip()]
    return "".join(f"{t} {DERIVED if t.startswith(MARKER) else ENGLISH}\n" for t in tokens)


def data_dir(cfg: Config, transform: str) -> str:
    return cfg.path("data", transform)


def data(cfg: Config, transform: str) -> Stage:
    """data-<t>: veco_pretraining's DATA of English + the derived language."""
    out = data_dir(cfg, transform)
    text = os.path.join(out, "text")
    preprocess = cfg.python + ["fairseq_cli.preprocess", "--srcdict", os.path.join(out, DICT_FILE)]
    preprocess += ["--workers", str(cfg.workers)]

    def body(ctx: "StageContext") -> None:
        if os.path.isdir(out):
            shutil.rmtree(out)
        os.makedirs(text)
        shutil.copyfile(cfg.joint_dict, os.path.join(out, DICT_FILE))
        _write(os.path.join(out, LANGUAGES), token_languages(cfg.joint_dict))
        sides = {}
        for lang, key in ((ENGLISH, ENGLISH), (DERIVED, transform)):
            with open(cfg.path("derived", key, TEXT), encoding="utf-8") as f:
                sides[lang] = f.readlines()
        train, valid, pairs = split_lines(
            len(sides[ENGLISH]), cfg.valid_lines, cfg.tlm_share, cfg.seed
        )
        pair = f"{ENGLISH}-{DERIVED}"
        for lang, lines in sides.items():
            for split, rows in (("train", train), ("valid", valid)):
                _write(os.path.join(text, f"{split}.{lang}"), "".join(lines[i] for i in rows))
            _write(os.path.join(text, f"pairs.{pair}.{lang}"), "".join(lines[i] for i in pairs))
            _write(os.path.join(text, f"vpairs.{pair}.{lang}"), "".join(lines[i] for i in valid))
        ctx.echo(f"mono: {len(train)} train, {len(valid)} valid lines a language; "
                 f"TLM pairs: {len(pairs)} train, {len(valid)} valid")  # fmt: skip
        for lang in sides:
            ctx.run(
                preprocess + ["--only-source", "--trainpref", os.path.join(text, f"train.{lang}"),
                              "--validpref", os.path.join(text, f"valid.{lang}"),
                              "--destdir", os.path.join(out, "mono", lang)]
            )  # fmt: skip
        ctx.run(
            preprocess + ["--tgtdict", os.path.join(out, DICT_FILE), "-s", ENGLISH, "-t", DERIVED,
                          "--trainpref", os.path.join(text, f"pairs.{pair}"),
                          "--validpref", os.path.join(text, f"vpairs.{pair}"),
                          "--destdir", os.path.join(out, "bi", pair)]
        )  # fmt: skip

    command = ["data", transform, str(cfg.valid_lines), str(cfg.tlm_share), str(cfg.seed)]
    command.append(LANGUAGES)
    return Stage(f"data-{transform}", command + preprocess, body)


def pos_row(
    cfg: Config, name: str, path: Optional[str] = None, languages: bool = False
) -> Pretrained:
    """A row of veco-xtreme's stages: the model ``name`` (``path``: its pre-trained
    checkpoint), with the run's vocabulary and shape (``languages``: and language
    embeddings)."""
    flags = ("--arch", cfg.arch, *cfg.size) + (LANGUAGE_FLAGS if languages else ())
    return Pretrained(name, path, cfg.spm, cfg.joint_dict, flags, cfg.model_positions)


def pos_files(cfg: Config, transform: str, lang: str) -> xtreme.Files:
    """Fine-tuning on ``lang`` (en: zero-shot; der: supervised); scored on the derived
    language's dev file, as the authors' scripts (:data:`RECIPE`)."""
    return xtreme.Files(
        (cfg.pos_file(lang, "train", transform),),
        (cfg.pos_file(lang, "dev", transform),),
        {DERIVED: (cfg.pos_file(DERIVED, "dev", transform),)},
    )


def pos_out(cfg: Config) -> str:
    return cfg.path("pos")


def prepare(cfg: Config, transform: str, lang: str) -> Stage:
    row = pos_row(cfg, f"{transform}-{lang}")
    command = xtreme.prepare_command(RECIPE, row, pos_files(cfg, transform, lang), pos_out(cfg),
                                     cfg.finetune)  # fmt: skip
    data = xtreme.data_dir(pos_out(cfg), row, None)
    return Stage(f"prepare-{row.name}", command, body=xtreme.fresh(data))


def shared_stages(cfg: Config) -> List[Stage]:
    stages = [corpus(cfg)]
    if cfg.spm_model is None:
        stages.append(spm(cfg))
    stages.append(derive(cfg))
    for t in cfg.transforms:
        stages += [data(cfg, t), prepare(cfg, t, ENGLISH), prepare(cfg, t, DERIVED)]
    return stages


# ------------------------------------------------------------------------ per model


def checkpoint(cfg: Config, transform: str, objective: str, updates: Optional[int] = None) -> str:
    """The pre-trained model: after the run, or (``updates``) at a curve's budget."""
    save_dir = cfg.pretrain_dir(transform, objective)
    if updates is None:
        return os.path.join(save_dir, "checkpoint_last.pt")
    return budget_checkpoint(save_dir, updates)


def budget_checkpoint(save_dir: str, updates: int) -> str:
    return os.path.join(save_dir, f"checkpoint_u{updates}.pt")


def saved_updates(path: str) -> int:
    """The updates of the fairseq checkpoint at ``path`` (0 when there is none)."""
    from ..checkpoints.averaging import num_updates
    from ..checkpoints.trusted_load import load_trusted

    return num_updates(load_trusted(path)) if os.path.isfile(path) else 0


def continued(save_dir: str, budgets: Sequence[int]):
    """A regime curve's pre-training body: the stage's command continued to each budget B
    in turn (``--max-update B`` appended: argparse keeps the last), the model at B copied
    to checkpoint_uB.pt. The model at B is the B-update run's: inverse_sqrt's rate depends
    on the update alone, fairseq seeds every update from ``--seed`` and its number and
    restores the data iterator's position, and a save does not draw. The directory is
    owned by the command less its ``--max-update`` (the last budget): a curve cut short or
    extended keeps the models kept so far."""

    def body(ctx: "StageContext") -> None:
        command = list(ctx.stage.command)
        at = command.index("--max-update")
        xtreme.claim(ctx, save_dir, command[:at] + command[at + 2 :])
        last = os.path.join(save_dir, "checkpoint_last.pt")
        for budget in budgets:
            kept = budget_checkpoint(save_dir, budget)
            if os.path.isfile(kept):
                continue
            reached = saved_updates(last)
            if reached > budget:  # fairseq would train on past it: the run would change
                ctx.echo(f"{last} is at {reached} updates: the model at {budget} was not "
                         f"kept; give budgets from {reached} on, or another --out")  # fmt: skip
                raise StageFailed(1)
            if reached < budget:
                ctx.run([*ctx.stage.command, "--max-update", str(budget)], ctx.stage.env)
            reached = saved_updates(last)
            if reached != budget:
                ctx.echo(f"{last}: {reached} updates after --max-update {budget}")
                raise StageFailed(1)
            shutil.copyfile(last, kept + ".part")
            os.replace(kept + ".part", kept)
            ctx.echo(f"the model at {budget} updates: {kept}")

    return body


def pretrain(cfg: Config, transform: str, objective: str) -> Stage:
    o = OBJECTIVES[objective]
    flags = ["--max-positions", str(cfg.model_positions)]
    flags += [f.replace("{dictionary}", cfg.path("derived", PAIRS_FILE)) for f in o.flags]
    if not o.pairs:
        flags += ["--bi-pairs", ""]
    if o.criterion == "align_mlm" and cfg.alpha is not None:
        flags += ["--align-weight", str(cfg.alpha)]
    if o.languages:
        flags += [*LANGUAGE_FLAGS, "--token-languages",
                  os.path.join(data_dir(cfg, transform), LANGUAGES)]  # fmt: skip
    args = PretrainingCommand(
        data=data_dir(cfg, transform),
        save_dir=cfg.pretrain_dir(transform, objective),
        criterion=o.criterion,
        updates=cfg.updates,
        warmup=cfg.warmup,
        max_tokens=cfg.max_tokens,
        max_positions=cfg.max_positions,
        lr=cfg.lr,
        user_dir=USER_DIR,
        langs=(ENGLISH, DERIVED),
        arch=cfg.arch,
        size=cfg.size,
        device=cfg.device,
        save_every=SAVE_EVERY if cfg.curve else min(cfg.updates, SAVE_EVERY),
        keep_last=1,
        validate="never" if cfg.curve else "at_end",
        log_interval=LOG_INTERVAL,
        seed=cfg.seed,
        extra=tuple(flags),
    ).args()
    command = cfg.python + ["fairseq_cli.train", *args]
    save_dir = cfg.pretrain_dir(transform, objective)
    name = f"pretrain-{model_name(transform, objective)}"
    body = continued(save_dir, cfg.curve) if cfg.curve else xtreme.resumable(save_dir)
    return Stage(name, command, body)


def alignment_path(
    cfg: Config, transform: str, objective: str, tuned: bool = False, updates: Optional[int] = None
) -> str:
    """The pre-trained model's alignment.json, or (``tuned``) its ZS fine-tuned model's;
    ``updates``: of the model at a curve's budget."""
    if tuned:
        name = finetune_name(transform, objective, ENGLISH, updates)
        return os.path.join(pos_out(cfg), name, "alignment.json")
    stem = "alignment" if updates is None else f"alignment_u{updates}"
    return os.path.join(cfg.pretrain_dir(transform, objective), stem + ".json")


def align(
    cfg: Config, transform: str, objective: str, tuned: bool = False, updates: Optional[int] = None
) -> Stage:
    """align-<t>-<o>: the alignment scores (:func:`score_checkpoint`) of the pre-trained
    model, or (``tuned``, align-<t>-<o>-zs) of the model fine-tuned on English."""
    ckpt = checkpoint(cfg, transform, objective, updates)
    name = model_name(transform, objective, updates)
    if tuned:
        name = finetune_name(transform, objective, ENGLISH, updates)
        ckpt = xtreme.kept_checkpoint(RECIPE, pos_out(cfg), name)
    out = alignment_path(cfg, transform, objective, tuned, updates)
    texts = [os.path.join(data_dir(cfg, transform), "text", "train.en")]
    pairs = cfg.path("derived", PAIRS_FILE)

    def body(ctx: "StageContext") -> None:
        result = score_checkpoint(ckpt, cfg.joint_dict, texts, pairs, cfg.seed)
        _write(out, json.dumps(result, indent=1) + "\n")
        parts = [k for k in ("dictionary", "outside", "languages") if k in result]
        shown = ", ".join(f"{k} {result[k]['score']:.4f}" for k in parts)
        tokens = result["vocabulary"]["tokens"]
        ctx.echo(f"alignment score {result['score']:.4f} over {tokens} English tokens ({shown})")

    command = ["align", ckpt, *texts, pairs, str(cfg.seed)]
    return Stage(f"align-{name}", command, body)


def finetune_name(transform: str, objective: str, lang: str, updates: Optional[int] = None) -> str:
    return f"{model_name(transform, objective, updates)}-{'zs' if lang == ENGLISH else 'sup'}"


def finetune_stages(
    cfg: Config, transform: str, objective: str, lang: str, updates: Optional[int] = None
) -> List[Stage]:
    out = pos_out(cfg)
    row = pos_row(
        cfg,
        finetune_name(transform, objective, lang, updates),
        checkpoint(cfg, transform, objective, updates),
        OBJECTIVES[objective].languages,
    )
    data = xtreme.data_dir(out, pos_row(cfg, f"{transform}-{lang}"), None)
    files = pos_files(cfg, transform, lang)
    s = cfg.finetune
    save_dir = os.path.join(out, row.name, "checkpoints")
    finetune = xtreme.finetune_command(RECIPE, row, data, out, s)
    test = xtreme.test_command(RECIPE, row, files, data, out)
    outputs = (xtreme.scores_path(out, row.name), os.path.join(out, row.name, "predictions"))
    stages = [Stage(f"finetune-{row.name}", finetune, xtreme.finetune_body(save_dir, s))]
    if lang == ENGLISH:
        stages.append(align(cfg, transform, objective, tuned=True, updates=updates))
    return stages + [Stage(f"test-{row.name}", test, body=xtreme.fresh(*outputs))]


def model_pipeline(cfg: Config, transform: str, objective: str) -> List[Stage]:
    stages = [pretrain(cfg, transform, objective)]
    for updates in cfg.budgets:
        stages.append(align(cfg, transform, objective, updates=updates))
        for lang in (ENGLISH, DERIVED):
            stages += finetune_stages(cfg, transform, objective, lang, updates)
    return stages


def pipelines(cfg: Config) -> List[List[Stage]]:
    return [model_pipeline(cfg, t, o) for t in cfg.transforms for o in cfg.objectives]


def pos_scores(
    cfg: Config, transform: str, objective: str, lang: str, updates: Optional[int] = None
) -> Dict[str, float]:
    """POS seqeval F1 and accuracy (%) on the derived dev file of a finished test stage
    (``lang``: the fine-tuning's, en for ZS)."""
    name = finetune_name(transform, objective, lang, updates)
    with open(xtreme.scores_path(pos_out(cfg), name), encoding="utf-8") as f:
        scores = json.load(f)[name]
    return {metric: float(scores[metric][DERIVED]) for metric in ("f1", "accuracy")}


def read_alignment(
    cfg: Config, transform: str, objective: str, tuned: bool = False, updates: Optional[int] = None
) -> Dict[str, Any]:
    with open(alignment_path(cfg, transform, objective, tuned, updates), encoding="utf-8") as f:
        return json.load(f)


def stage_names(cfg: Config) -> Sequence[str]:
    return [s.name for s in shared_stages(cfg)] + [s.name for p in pipelines(cfg) for s in p]
