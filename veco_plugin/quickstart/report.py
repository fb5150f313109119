"""Results of the quickstart: a table, a learning-curve plot and a JSON summary.

Reads what the quickstart stages left in the run directory::

    RUN/stamps/<stage>.done           seconds each stage took, when it finished (JSON)
    RUN/logs/pretrain-<init>.log      fairseq-train --log-format json (last valid record,
                                      with ``align_score`` when the run logs one)
    RUN/logs/finetune-<init>.log      every ``valid`` record: valid_loss and the greedy valid
                                      BLEU of fairseq's --eval-bleu, per --eval-interval updates
    RUN/eval/<init>/scores.json       scripts/evaluate-wmt14.sh: sacreBLEU + tokenized BLEU
    RUN/eval/<init>/test.hyp.<tgt>    detokenized hypotheses (beam search, averaged checkpoint)
    RUN/nmt-bin/test.raw.{src,tgt}    the test sources and references
    RUN/text/catalogs.json            corpus statistics of veco-gettext-corpus (if present)

and writes ``RUN/results.md`` (printed too), ``RUN/results.json`` and
``RUN/learning_curve.png`` (valid BLEU and valid loss against fine-tuning updates, one line
per initialization: the small-scale twin of the paper's learning-curve figure).

fairseq logs no ``valid_bleu`` when every hypothesis is empty (no n-grams to count); such a
point is BLEU 0 and is marked ``"bleu_logged": false`` in the JSON. Every number written is
checked to be finite; a missing or malformed input stops the report with one line.
Labels, criteria and notes come from the table of objectives (the random-initialization
baseline is not an objective); the alignment section from its aligning rows.

    python -m veco_plugin.quickstart.report --run-dir RUN --inits veco,xlm,random ...
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any, Dict, List, Optional, Sequence

from veco_plugin import fairseq_logs
from veco_plugin.corpora.text import read_lines_strict
from veco_plugin.objectives import OBJECTIVES, Objective, objective
from veco_plugin.pipeline.runner import read_stamp as _read_stamp_file
from veco_plugin.pipeline.runner import stamp_path

from .stages import RANDOM, labels

PROG = "quickstart.report"


class ReportError(Exception):
    """A missing or malformed input; reported as one line, exit status 1."""


# ----------------------------------------------------------------------------- reading


def read_stamp(run: str, stage: str) -> Optional[Dict[str, Any]]:
    """``RUN/stamps/<stage>.done`` (None if the stage never ran)."""
    return _read_stamp_file(stamp_path(run, stage))


def stage_seconds(run: str, stage: str) -> Optional[float]:
    stamp = read_stamp(run, stage)
    if stamp is None or "seconds" not in stamp:
        return None
    return float(stamp["seconds"])


def json_records(path: str, tag: str) -> List[Dict[str, Any]]:
    """fairseq ``--log-format json`` records of one kind in the log file ``path``."""
    if not os.path.isfile(path):
        raise ReportError(f"{path} not found: did the stage run?")
    with open(path, encoding="utf-8", errors="replace") as f:
        return fairseq_logs.json_records(f, tag)


def learning_curve(log: str) -> List[Dict[str, Any]]:
    """One point per validated update (the last record wins after a resumed run)."""
    points: Dict[int, Dict[str, Any]] = {}
    for r in json_records(log, "valid"):
        if "num_updates" not in r or "loss" not in r:
            continue
        update = int(r["num_updates"])
        logged = "bleu" in r
        points[update] = {
            "update": update,
            "valid_loss": float(r["loss"]),
            "valid_nll_loss": float(r.get("nll_loss", r["loss"])),
            "valid_bleu": float(r["bleu"]) if logged else 0.0,
            "bleu_logged": logged,
        }
    if not points:
        raise ReportError(f"{log}: no valid records (fairseq --log-format json)")
    return [points[u] for u in sorted(points)]


def pretrain_summary(run: str, init: str) -> Optional[Dict[str, Any]]:
    if init == RANDOM:
        return None
    criterion = objective(init).criterion
    records = json_records(os.path.join(run, "logs", f"pretrain-{init}.log"), "valid")
    summary: Dict[str, Any] = {
        "criterion": criterion,
        "seconds": stage_seconds(run, f"pretrain-{init}"),
        "init_seconds": stage_seconds(run, f"init-{init}"),
    }
    if records:
        last = records[-1]
        summary["updates"] = int(last.get("num_updates", 0))
        summary["valid_loss"] = float(last["loss"])
        if "align_score" in last:  # ALIGN-MLM's word-translation score (--align-heldout)
            summary["align_score"] = float(last["align_score"])
    return summary


def read_lines(path: str) -> List[str]:
    """The lines of a file a stage wrote; a missing one is a :class:`ReportError`."""
    if not os.path.isfile(path):
        raise ReportError(f"{path} not found")
    return read_lines_strict(path, keep_raw=True)


def test_scores(run: str, init: str) -> Dict[str, Any]:
    path = os.path.join(run, "eval", init, "scores.json")
    if not os.path.isfile(path):
        raise ReportError(f"{path} not found: did eval-{init} run?")
    with open(path, encoding="utf-8") as f:
        scores = json.load(f)
    try:
        return {
            "sentences": int(scores["sentences"]),
            "sacrebleu": float(scores["sacrebleu"]["score"]),
            "sacrebleu_signature": scores["sacrebleu"]["signature"],
            "sacrebleu_text": scores["sacrebleu"]["text"],
            "tokenized_bleu": float(scores["tokenized_bleu"]["score"]),
            "tokenized_bleu_signature": scores["tokenized_bleu"]["signature"],
            "checkpoint": scores.get("checkpoint"),
            "hypotheses": scores["hypotheses"],
        }
    except (KeyError, TypeError, ValueError) as exc:
        raise ReportError(f"{path}: malformed ({type(exc).__name__}: {exc})") from None


# ----------------------------------------------------------------------------- summary


def check_finite(obj: Any, where: str = "results") -> None:
    """Every float in ``obj`` (nested dicts/lists) is finite."""
    if isinstance(obj, float):
        if not math.isfinite(obj):
            raise ReportError(f"{where} is {obj}: not a finite number")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            check_finite(v, f"{where}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            check_finite(v, f"{where}[{i}]")


def pick_examples(
    sources: Sequence[str], n: int, min_words: int = 4, max_words: int = 14
) -> List[int]:
    """``n`` test sentences of a readable length, spread evenly over the test set (whose
    catalogs come one after the other); all sentences if too few are readable."""
    ids = [i for i, s in enumerate(sources) if min_words <= len(s.split()) <= max_words]
    ids = ids if len(ids) >= n else list(range(len(sources)))
    if n <= 0 or not ids:
        return []
    step = len(ids) / n
    return sorted({ids[int(k * step)] for k in range(n)})


def wall_seconds(run: str) -> Optional[float]:
    """From the start of the first stage to the end of the last one (report excluded)."""
    from datetime import datetime

    spans = []
    stamps = os.path.join(run, "stamps")
    for name in os.listdir(stamps) if os.path.isdir(stamps) else []:
        if not name.endswith(".done") or name == "report.done":
            continue
        stamp = read_stamp(run, name[: -len(".done")]) or {}
        try:
            end = datetime.fromisoformat(stamp["finished"]).timestamp()
            spans.append((end - float(stamp["seconds"]), end))
        except (KeyError, TypeError, ValueError):
            continue
    if not spans:
        return None
    return max(e for _, e in spans) - min(s for s, _ in spans)


def notes(inits: Sequence[str]) -> List[str]:
    """The table's caveats of the rows in the table ("<label> row: <note>")."""
    return [f"{row.label} row: {row.note}" for row in OBJECTIVES if row.run in inits and row.note]


def aligner(align_dir: Optional[str]) -> Optional[Objective]:
    """The first aligning row of the table whose links are in ``align_dir``."""
    for row in OBJECTIVES:
        if row.aligns and align_dir and os.path.isfile(os.path.join(align_dir, f"{row.run}.align")):
            return row
    return None


def alignment_summary(
    align_dir: Optional[str], run: str, src: str, tgt: str, count: int
) -> Optional[Dict[str, Any]]:
    """Word-aligned test pairs before (the aligning row's ``starts_from``, e.g. ca_mlm) and
    after it (e.g. dwa), and its run's last training record; None when the alignment
    stages did not run (--dwa-updates 0)."""
    row = aligner(align_dir)
    if row is None or align_dir is None:
        return None
    models = [m for m in (row.starts_from, row.run) if m]
    src_lines = read_lines(os.path.join(align_dir, f"test.{src}"))
    tgt_lines = read_lines(os.path.join(align_dir, f"test.{tgt}"))
    links = {m: read_lines(os.path.join(align_dir, f"{m}.align")) for m in models}
    for model, lines in links.items():
        if len(lines) != len(src_lines):
            raise ReportError(
                f"{align_dir}/{model}.align: {len(lines)} lines, {len(src_lines)} pairs"
            )
    train = json_records(os.path.join(run, "logs", f"pretrain-{row.run}.log"), "train")
    examples = []
    for i in pick_examples(src_lines, count):
        x, y = src_lines[i].split(), tgt_lines[i].split()
        pairs = {}
        for model, lines in links.items():
            pairs[model] = [
                f"{x[int(a)]}–{y[int(b)]}"
                for a, b in (link.split("-") for link in lines[i].split())
            ]
        examples.append({"id": i, "source": src_lines[i], "target": tgt_lines[i], "links": pairs})
    last = train[-1] if train else {}
    c = row.criterion  # XLM-Align's self-labelling statistics, as dwa logs them
    return {
        "pairs": len(src_lines),
        "before": row.starts_from,
        "after": row.run,
        f"{row.run}_updates": int(last.get("num_updates", 0)),
        f"{row.run}_seconds": stage_seconds(run, f"pretrain-{row.run}"),
        "label_share": last.get(f"{c}_label_share"),
        "links_per_pair": last.get(f"{c}_links_per_pair"),
        "pointer_acc": last.get(f"bi_{c}_acc"),
        "examples": examples,
    }


def build_summary(args: argparse.Namespace) -> Dict[str, Any]:
    run, inits, label = args.run_dir, args.inits, labels()
    known = [row.run for row in OBJECTIVES if row.translate] + [RANDOM]
    for init in inits:
        if init not in known:
            raise ReportError(f"--inits: unknown init '{init}' ({', '.join(known)})")
    nmt = os.path.join(run, "nmt-bin")
    sources = read_lines(os.path.join(nmt, f"test.raw.{args.src}"))
    references = read_lines(os.path.join(nmt, f"test.raw.{args.tgt}"))
    results: Dict[str, Any] = {}
    hyps: Dict[str, List[str]] = {}
    for init in inits:
        curve = learning_curve(os.path.join(run, "logs", f"finetune-{init}.log"))
        scores = test_scores(run, init)
        hyps[init] = read_lines(os.path.join(run, "eval", init, f"test.hyp.{args.tgt}"))
        if len(hyps[init]) != len(sources) or scores["sentences"] != len(sources):
            raise ReportError(
                f"eval/{init}: {len(hyps[init])} hypotheses, {scores['sentences']} scored, "
                f"but {len(sources)} test sentences"
            )
        results[init] = {
            "label": label[init],
            "pretraining": pretrain_summary(run, init),
            "finetune": {
                "updates": curve[-1]["update"],
                "seconds": stage_seconds(run, f"finetune-{init}"),
                "final_valid_loss": curve[-1]["valid_loss"],
                "final_valid_bleu": curve[-1]["valid_bleu"],
                "curve": curve,
            },
            "test": scores,
            "eval_seconds": stage_seconds(run, f"eval-{init}"),
        }
    examples = [
        {
            "id": i,
            "source": sources[i],
            "reference": references[i],
            "hypotheses": {init: hyps[init][i] for init in inits},
        }
        for i in pick_examples(sources, args.examples)
    ]
    corpus = None
    catalogs = os.path.join(run, "text", "catalogs.json")
    if os.path.isfile(catalogs):
        with open(catalogs, encoding="utf-8") as f:
            stats = json.load(f)
        corpus = {
            "source": "gettext catalogs (veco-gettext-corpus)",
            "pairs": {k: v["pairs"] for k, v in stats["splits"].items()},
            "catalogs": {k: len(v["catalogs"]) for k, v in stats["splits"].items()},
        }
    text_counts = {}
    for split in ("train", "valid", "test"):
        path = os.path.join(run, "text", f"{split}.{args.src}")
        if os.path.isfile(path):
            text_counts[split] = len(read_lines(path))
    stages = {}
    stamps = os.path.join(run, "stamps")
    for name in sorted(os.listdir(stamps)) if os.path.isdir(stamps) else []:
        if name.endswith(".done") and name != "report.done":
            seconds = stage_seconds(run, name[: -len(".done")])
            if seconds is not None:
                stages[name[: -len(".done")]] = seconds
    summary = {
        "run_dir": os.path.abspath(run),
        "pair": f"{args.src}-{args.tgt}",
        "settings": {
            "arch": args.arch,
            "pretrain_updates": args.pretrain_updates,
            "finetune_updates": args.finetune_updates,
            "eval_interval": args.eval_interval,
            "average_last": args.average_last,
            "beam": args.beam,
            "valid_bleu": "greedy (beam 1) on the valid set, fairseq --eval-bleu, "
            "sentencepiece decoded, sacreBLEU 13a",
            "test_bleu": f"beam {args.beam}, average of the last {args.average_last} "
            "checkpoints, every test sentence; detokenized sacreBLEU and tokenized BLEU "
            "(scripts/evaluate-wmt14.sh)",
        },
        "corpus": corpus,
        "text_lines": text_counts,
        "results": results,
        "examples": examples,
        "alignment": alignment_summary(args.align_dir, run, args.src, args.tgt, args.examples),
        "stage_seconds": stages,
        "wall_seconds": wall_seconds(run),
        "notes": notes(inits),
    }
    check_finite(summary)
    return summary


# ----------------------------------------------------------------------------- writing


def _minutes(seconds: Optional[float]) -> str:
    return "-" if seconds is None else f"{seconds / 60:.1f}"


def markdown(summary: Dict[str, Any]) -> str:
    s = summary["settings"]
    lines = [
        f"# Quickstart results ({summary['pair']}, veco_transformer_{s['arch']})",
        "",
        f"Fine-tuning: {s['finetune_updates']} updates for every initialization; "
        f"pre-training: {s['pretrain_updates']} updates. Test: {s['test_bleu']}. "
        f"Valid BLEU: {s['valid_bleu']}.",
        "",
        f"Wall time of all stages: {_minutes(summary['wall_seconds'])} min "
        "(first stage start to last stage end).",
        "",
        "| initialization | test sacreBLEU | test tok. BLEU | valid BLEU | valid loss "
        "| pre-train min | fine-tune min | eval min |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in summary["results"].values():
        ft, test, pre = r["finetune"], r["test"], r["pretraining"] or {}
        lines.append(
            f"| {r['label']} | {test['sacrebleu']:.2f} | {test['tokenized_bleu']:.2f} "
            f"| {ft['final_valid_bleu']:.2f} | {ft['final_valid_loss']:.3f} "
            f"| {_minutes(pre.get('seconds'))} | {_minutes(ft['seconds'])} "
            f"| {_minutes(r['eval_seconds'])} |"
        )
    scores = [
        f"{r['label']} {r['pretraining']['align_score']:.2f}%"
        for r in summary["results"].values()
        if "align_score" in (r["pretraining"] or {})
    ]
    if scores:
        lines += [
            "",
            "Alignment score of the pre-trained input embeddings (last pre-training "
            "validation; share of held-out word-list source words whose nearest target "
            "word by cosine is a translation): " + ", ".join(scores) + ".",
        ]
    first = next(iter(summary["results"].values()))["test"]
    lines += ["", f"sacreBLEU signature: `{first['sacrebleu_signature']}`", ""]
    if summary["corpus"]:
        c = summary["corpus"]
        used = summary["text_lines"]
        lines.append(
            "Corpus: gettext catalogs, valid/test from held-out catalogs: "
            + ", ".join(
                f"{k} {v} pairs ({c['catalogs'][k]} catalogs)" for k, v in c["pairs"].items()
            )
            + "; used: "
            + ", ".join(f"{k} {v}" for k, v in used.items())
            + "."
        )
        lines.append("")
    lines += ["## Translated test examples", ""]
    for ex in summary["examples"]:
        lines.append(f"- **source** ({ex['id']}): {ex['source']}")
        lines.append(f"  - reference: {ex['reference']}")
        for init, hyp in ex["hypotheses"].items():
            lines.append(f"  - {init}: {hyp}")
    a = summary["alignment"]
    if a:
        models = [m for m in (a["before"], a["after"]) if m]
        crit = {m: objective(m).criterion for m in models}
        lines += [
            "",
            "## Word alignment (veco-align, XLM-Align's optimal transport + filtering)",
            "",
            f"{a['pairs']} test pairs aligned with the {crit.get(a['before'])} checkpoint "
            f"(before) and after {a[a['after'] + '_updates']} `{crit[a['after']]}` updates "
            f"from it ({_minutes(a[a['after'] + '_seconds'])} min; last "
            f"training record: {a['label_share']}% of masked bilingual pieces self-labelled, "
            f"{a['links_per_pair']} links per pair, pointer accuracy {a['pointer_acc']}%). "
            "Whitespace words; punctuation stays attached.",
            "",
        ]
        for ex in a["examples"]:
            lines.append(f"- **{ex['id']}**: {ex['source']} ‖ {ex['target']}")
            for model in models:
                links = ", ".join(ex["links"][model]) or "(no links)"
                lines.append(f"  - {crit[model]}: {links}")
    lines += ["", "## Notes", ""] + [f"- {n}" for n in summary["notes"]]
    return "\n".join(lines) + "\n"


def plot(summary: Dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_bleu, ax_loss) = plt.subplots(1, 2, figsize=(10, 4))
    for init, r in summary["results"].items():
        curve = r["finetune"]["curve"]
        updates = [p["update"] for p in curve]
        ax_bleu.plot(updates, [p["valid_bleu"] for p in curve], marker="o", label=r["label"])
        ax_loss.plot(updates, [p["valid_loss"] for p in curve], marker="o", label=r["label"])
    ax_bleu.set_ylim(bottom=0)
    ax_bleu.set_title("valid BLEU (greedy)")
    ax_loss.set_title("valid loss (label-smoothed, base 2)")
    for ax in (ax_bleu, ax_loss):
        ax.set_xlabel("fine-tuning updates")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(f"{summary['pair']}: fine-tuning from each initialization")
    fig.tight_layout()
    fig.savefig(path + ".part.png", dpi=100)
    plt.close(fig)
    os.replace(path + ".part.png", path)


def write(summary: Dict[str, Any], run: str) -> str:
    table = markdown(summary)
    for name, text in (
        ("results.json", json.dumps(summary, indent=2, ensure_ascii=False) + "\n"),
        ("results.md", table),
    ):
        path = os.path.join(run, name)
        with open(path + ".part", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(path + ".part", path)
    plot(summary, os.path.join(run, "learning_curve.png"))
    return table


# ------------------------------------------------------------------------------- CLI


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("--run-dir", required=True, help="the quickstart run directory")
    p.add_argument(
        "--inits",
        default=",".join([row.run for row in OBJECTIVES if row.translate] + [RANDOM]),
        help="comma-separated initializations (default: %(default)s)",
    )
    p.add_argument("--src", default="en", help="source language (default: %(default)s)")
    p.add_argument("--tgt", default="de", help="target language (default: %(default)s)")
    p.add_argument("--arch", default="tiny", help="model size name, for the table")
    p.add_argument("--pretrain-updates", type=int, default=0, help="for the table")
    p.add_argument("--finetune-updates", type=int, default=0, help="for the table")
    p.add_argument("--eval-interval", type=int, default=0, help="for the table")
    p.add_argument("--average-last", type=int, default=0, help="for the table")
    p.add_argument("--beam", type=int, default=5, help="for the table")
    p.add_argument("--examples", type=int, default=5, help="translated examples (default: 5)")
    p.add_argument("--align-dir", help="RUN/align of the alignment stages, if they ran")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = get_parser().parse_args(argv)
    args.inits = [i for i in args.inits.split(",") if i]
    try:
        summary = build_summary(args)
        write(summary, args.run_dir)
    except ReportError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {args.run_dir}/results.md, results.json, learning_curve.png", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
