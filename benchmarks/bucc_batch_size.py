#!/usr/bin/env python
"""Does ``veco-bucc-eval``'s mined set depend on ``--batch-size``?

One checkpoint, one XTREME-layout bucc2018 folder, one language: both splits embedded at
each of ``--batch-sizes`` (``<s>`` states of XTREME's layer, batches in input order,
right-padded: :func:`veco_plugin.evaluation.xtreme_retrieval.sentence_embeddings`), then
mined, thresholded and scored as ``veco-bucc-eval`` does
(:func:`~veco_plugin.evaluation.bucc.mine_split`, ``best_threshold``, ``extract``,
``f1_scores``). Printed (Markdown), against ``--reference`` (100, the CLI's default):

* per batch size: the dev threshold, dev F1, test F1 (test gold present), the largest
  absolute difference of a ``<s>`` embedding coordinate from the reference's, the predicted
  test pairs, how many of them differ from the reference's (symmetric difference of the
  sets), and whether the prediction file is the same line for line (order included);
* per split, over all batch sizes: candidate pairs not common to all; over the common ones,
  the largest absolute margin difference, the smallest gap between two margins at the
  reference (how near the nearest tie is), how many *pairs of candidates* (a, b) change
  their margin order (>, =, <) between any two batch sizes, and how many *candidates*
  change their rank position (by decreasing margin, ties by id) between any two.

``--make-data-from-laser DIR`` first writes a BUCC-shaped folder at ``--data`` from LASER's
Tatoeba v1 (the real BUCC files are not to be had here): ``DIR`` is a LASER checkout (its
``data/tatoeba/v1``) or a folder holding the ``tatoeba.*`` files; from a bare clone, extract
them first::

    for f in deu-eng.deu deu-eng.eng spa-eng.eng ita-eng.eng nld-eng.eng por-eng.eng \\
             pol-eng.eng swe-eng.eng; do
        git -C LASER.git show HEAD:data/tatoeba/v1/tatoeba.$f > /tmp/laser/tatoeba.$f
    done
    python benchmarks/bucc_batch_size.py --make-data-from-laser /tmp/laser \\
        --data /tmp/bucc-laser --checkpoint CKPT [--spm-model M --dict D] [--json OUT]

The folder (``LAYOUT``): dev = Tatoeba's German-English pairs 0-299 with their English,
German 300-499 without theirs, 1500 distractor English sentences; test = pairs 500-799,
German 800-999 alone, 1500 other distractors; gold files for both splits. Distractors are
the English sides of ``--distractor-langs``' Tatoeba files taken in turn, each sentence
once, none of the German file's English; the English side is sorted by sentence (a
comparable corpus has no line order to lean on); ids ``de-%09d`` / ``en-%09d`` (distractors
from 900000), as ``tests/helpers/bucc.py`` writes them.
"""

import argparse
import itertools
import os
import platform
import sys
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import write_json  # noqa: E402

from veco_plugin.checkpoints.encoder import (  # noqa: E402
    find_spm_model,
    load_encoder,
    load_spm_model,
)
from veco_plugin.corpora.bucc import BuccSplit, read_split  # noqa: E402
from veco_plugin.errors import VecoUserError  # noqa: E402
from veco_plugin.evaluation.bucc import (  # noqa: E402
    Pair,
    best_threshold,
    extract,
    f1_scores,
    mine_split,
)
from veco_plugin.evaluation.xtreme_retrieval import resolve, sentence_embeddings  # noqa: E402

SPLITS = ("dev", "test")
TATOEBA = {"de": "deu", "fr": "fra", "ru": "rus", "zh": "cmn"}  # BUCC's xx -> LASER's code
# split -> (pairs with their English, source sentences alone, distractors), as ranges
LAYOUT = {
    "dev": (range(0, 300), range(300, 500), range(0, 1500)),
    "test": (range(500, 800), range(800, 1000), range(1500, 3000)),
}
DISTRACTOR_ID = 900000


def laser_lines(laser: str, name: str) -> List[str]:
    """``tatoeba.NAME`` from a LASER checkout (``data/tatoeba/v1``) or a folder of the files."""
    for folder in (os.path.join(laser, "data", "tatoeba", "v1"), laser):
        file = os.path.join(folder, f"tatoeba.{name}")
        if os.path.isfile(file):
            with open(file, encoding="utf-8") as f:
                return [line.rstrip("\n") for line in f]
    raise SystemExit(f"--make-data-from-laser {laser}: no tatoeba.{name} (module docstring)")


def distractors(laser: str, langs: Sequence[str], exclude: set, n: int) -> List[str]:
    """``n`` distinct English sentences of ``langs``' Tatoeba files, one file after the
    other line by line (round robin), none in ``exclude``."""
    files = [laser_lines(laser, f"{lang}-eng.eng") for lang in langs]
    out: Dict[str, None] = {}
    for row in itertools.zip_longest(*files):
        for sentence in row:
            if sentence and sentence.strip() and sentence not in exclude:
                out.setdefault(sentence, None)
    if len(out) < n:
        raise SystemExit(f"--distractor-langs: {len(out)} English sentences, {n} needed")
    return list(out)[:n]


def make_bucc_folder(laser: str, out: str, lang: str, distractor_langs: Sequence[str]) -> None:
    """XTREME's bucc2018 layout for ``lang``-en at ``out`` (module docstring, ``LAYOUT``)."""
    code = TATOEBA[lang]
    src = laser_lines(laser, f"{code}-eng.{code}")
    eng = laser_lines(laser, f"{code}-eng.eng")
    needed = max(r.stop for layout in LAYOUT.values() for r in layout[:2])
    if len(src) < needed or len(src) != len(eng):
        raise SystemExit(f"tatoeba.{code}-eng: {len(src)}/{len(eng)} lines, {needed} needed")
    others = distractors(
        laser, [x for x in distractor_langs if x != code], set(eng), LAYOUT["test"][2].stop
    )
    os.makedirs(out, exist_ok=True)
    for split, (paired, alone, extra) in LAYOUT.items():
        source = [(f"{lang}-{i:09d}", src[i]) for i in (*paired, *alone)]
        english = [(f"en-{i:09d}", eng[i]) for i in paired]
        english += [(f"en-{DISTRACTOR_ID + n:09d}", others[n]) for n in extra]
        english.sort(key=lambda row: row[1])
        gold = [(f"{lang}-{i:09d}", f"en-{i:09d}") for i in paired]
        for suffix, rows in ((lang, source), ("en", english), ("gold", gold)):
            with open(os.path.join(out, f"{lang}-en.{split}.{suffix}"), "w", encoding="utf-8") as f:
                f.write("".join(f"{a}\t{b}\n" for a, b in rows))


def mined_at(
    splits: Dict[str, BuccSplit], embed: Callable[[List[str]], torch.Tensor]
) -> Tuple[Dict[str, Dict[Pair, float]], torch.Tensor]:
    """Each split's candidates (``veco-bucc-eval``'s mining) and every embedding computed,
    in call order, concatenated: (N, C)."""
    states: List[torch.Tensor] = []

    def recorded(lines: List[str]) -> torch.Tensor:
        states.append(embed(lines))
        return states[-1]

    candidates = {s: mine_split(split, recorded) for s, split in splits.items()}
    return candidates, torch.cat(states)


def scores(candidates: Dict[str, Dict[Pair, float]], splits: Dict[str, BuccSplit]) -> Dict:
    """Threshold on dev gold, dev F1, test predictions and (gold present) test F1."""
    gold = {s: ["\t".join(p) for p in split.gold or ()] for s, split in splits.items()}
    threshold = best_threshold(candidates["dev"], splits["dev"].gold or set())
    predicted = extract(candidates["test"], threshold)
    out = {
        "threshold": threshold,
        "dev_f1": f1_scores(gold["dev"], extract(candidates["dev"], threshold)).f1,
        "test_f1": f1_scores(gold["test"], predicted).f1 if splits["test"].gold else None,
        "predicted": predicted,
    }
    return out


def order_changes(margins: torch.Tensor) -> Tuple[int, int]:
    """margins: (S, N), one row per batch size, one column per candidate (sorted by id).

    Returns:
        pairs of candidates (a, b), a < b, whose order (>, =, <) differs between two rows;
        candidates whose rank position (decreasing margin, ties by column) differs.
    """
    signs = torch.sign(margins.unsqueeze(2) - margins.unsqueeze(1)).to(torch.int8)  # (S, N, N)
    flipped = (signs != signs[:1]).any(0).triu(1)  # vs row 0: differs between some two rows
    ranks = torch.empty_like(margins, dtype=torch.long)
    order = torch.argsort(-margins, dim=1, stable=True)  # (S, N)
    ranks.scatter_(1, order, torch.arange(margins.size(1)).expand_as(order))
    moved = (ranks != ranks[:1]).any(0)
    return int(flipped.sum()), int(moved.sum())


def stability(
    runs: Dict[int, Dict[str, Dict[Pair, float]]], reference: int
) -> Dict[str, Dict[str, float]]:
    """Per split, across batch sizes: candidate pairs not common to all, and over the
    common ones the largest margin difference, the smallest gap at ``reference`` and the
    order changes (:func:`order_changes`)."""
    out = {}
    for split in SPLITS:
        keys = [set(r[split]) for r in runs.values()]
        common = sorted(set.intersection(*keys))
        margins = torch.tensor(
            [[r[split][p] for p in common] for r in runs.values()], dtype=torch.float64
        ).reshape(len(runs), len(common))
        at_ref = torch.sort(torch.tensor([runs[reference][split][p] for p in common])).values
        pairs, moved = order_changes(margins)
        out[split] = {
            "candidates_at_reference": len(runs[reference][split]),
            "common": len(common),
            "not_common": len(set.union(*keys)) - len(common),
            "max_margin_diff": float((margins - margins[:1]).abs().max()) if common else 0.0,
            "min_gap_at_reference": float(at_ref.diff().min()) if len(common) > 1 else 0.0,
            "pairs_reordered": pairs,
            "candidates_rank_changed": moved,
        }
    return out


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--checkpoint", required=True, help="a veco / XLM-R encoder checkpoint")
    p.add_argument("--spm-model", default=None, help="default: next to the checkpoint")
    p.add_argument("--dict", default=None, help="default: next to the checkpoint")
    p.add_argument("--layer", type=int, default=None, help="0..L (default: XTREME's layer)")
    p.add_argument("--data", required=True, help="XTREME's bucc2018 layout (test gold kept)")
    p.add_argument("--lang", default="de", choices=sorted(TATOEBA))
    p.add_argument("--batch-sizes", default="32,64,100,256", help="comma-separated")
    p.add_argument("--reference", type=int, default=100, help="veco-bucc-eval's --batch-size")
    p.add_argument("--make-data-from-laser", metavar="DIR", help="first write --data from LASER")
    p.add_argument(
        "--distractor-langs",
        default="spa,ita,nld,por,pol,swe",
        help="LASER codes whose Tatoeba English gives the distractors",
    )
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    p.add_argument("--cpu", action="store_true", help="run on the CPU")
    p.add_argument("--json", help="write the results here")
    return p.parse_args(argv)


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def fmt(x: Optional[float], spec: str) -> str:
    return "-" if x is None else format(x, spec)


def main(argv: Optional[Sequence[str]] = None) -> Dict:
    a = parse_args(argv)
    if not all(b.isdigit() and int(b) > 0 for b in a.batch_sizes.split(",")):
        raise VecoUserError(
            f"--batch-sizes {a.batch_sizes}: give positive integers, e.g. 32,64,100"
        )
    sizes = [int(b) for b in a.batch_sizes.split(",")]
    if a.reference not in sizes:
        sizes.append(a.reference)
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.make_data_from_laser:
        make_bucc_folder(a.make_data_from_laser, a.data, a.lang, a.distractor_langs.split(","))
    splits = {s: read_split(a.data, a.lang, s) for s in SPLITS}
    device = torch.device("cuda" if torch.cuda.is_available() and not a.cpu else "cpu")
    spm = load_spm_model(find_spm_model(a.spm_model, a.checkpoint))
    model, dictionary = load_encoder(a.checkpoint, a.dict, device)
    layer = resolve(model, a.layer, "bucc2018")

    runs, states, results = {}, {}, {}
    for b in sizes:

        def embed(lines: List[str], b: int = b) -> torch.Tensor:
            return sentence_embeddings(model, dictionary, spm, lines, layer, "cls", b)

        runs[b], states[b] = mined_at(splits, embed)
        results[b] = scores(runs[b], splits)
    ref = results[a.reference]
    for b in sizes:
        r = results[b]
        r["max_state_diff"] = float((states[b] - states[a.reference]).abs().max())
        r["predicted_differ"] = len(set(r["predicted"]) ^ set(ref["predicted"]))
        r["same_file"] = r["predicted"] == ref["predicted"]
    across = stability(runs, a.reference)

    scale = float(states[a.reference].abs().max())
    where = f"{device.type}: {cpu_name() if device.type == 'cpu' else torch.cuda.get_device_name()}"
    print(
        f"{a.checkpoint} (layer {layer}), {a.data} {a.lang}-en: "
        + ", ".join(
            f"{s} {len(splits[s].source.ids)} x {len(splits[s].english.ids)}" for s in SPLITS
        )
        + f"; {where}, {torch.get_num_threads()} threads, torch {torch.__version__}; "
        f"largest abs `<s>` coordinate at {a.reference}: {scale:.3g}\n"
    )
    print(
        f"| batch size | dev threshold | dev F1 | test F1 | max abs Δ `<s>` vs {a.reference} "
        f"| predicted test pairs | differ from {a.reference}'s | same prediction file |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|:---:|")
    for b in sizes:
        r = results[b]
        print(
            f"| {b} | {r['threshold']:.6f} | {r['dev_f1']:.2f} | {fmt(r['test_f1'], '.2f')} "
            f"| {r['max_state_diff']:.2e} | {len(r['predicted'])} | {r['predicted_differ']} "
            f"| {'yes' if r['same_file'] else 'no'} |"
        )
    print(
        f"\n| split | candidates at {a.reference} | not common to all | max abs margin Δ "
        "(common) | smallest margin gap at "
        f"{a.reference} | candidate pairs (a, b) reordered | candidates whose rank changes |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for split, s in across.items():
        print(
            f"| {split} | {s['candidates_at_reference']} | {s['not_common']} "
            f"| {s['max_margin_diff']:.2e} | {s['min_gap_at_reference']:.2e} "
            f"| {s['pairs_reordered']} of {s['common'] * (s['common'] - 1) // 2} "
            f"| {s['candidates_rank_changed']} of {s['common']} |"
        )
    result = {
        "checkpoint": a.checkpoint,
        "data": a.data,
        "lang": a.lang,
        "layer": layer,
        "reference": a.reference,
        "device": where,
        "threads": torch.get_num_threads(),
        "max_abs_state_at_reference": scale,
        "torch": torch.__version__,
        "per_batch_size": {
            str(b): {k: v for k, v in results[b].items() if k != "predicted"} for b in sizes
        },
        "across_batch_sizes": across,
    }
    if a.json:
        write_json(a.json, result)
    return result


if __name__ == "__main__":
    main()
