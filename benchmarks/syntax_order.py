"""T_syn's ordering model measured on real treebanks: trained on French UD trees, scored on
held-out French trees (mean log-likelihood per family against the side and uniform
baselines; the rates its samples give against French's own), then applied to English
trees (the same rates before and after T_syn) and timed.

::

    python benchmarks/syntax_order.py --train fr_sequoia-ud-train.conllu \\
        --train fr_partut-ud-train.conllu --train fr_gsd-ud-dev.conllu \\
        --train fr_pud-ud-test.conllu --held-out fr_gsd-ud-test.conllu \\
        --held-out fr_sequoia-ud-test.conllu --held-out fr_partut-ud-test.conllu \\
        --english en_ewt-ud-train.conllu

Prints one JSON object.
"""

import argparse
import json
import time

from veco_plugin.corpora import syntax as sx
from veco_plugin.corpora.syntax_order import SideModel, train

RATES = (("N", "amod|ADJ"), ("V", "obj|PRON"), ("V", "obj|NOUN"), ("V", "nsubj|NOUN"))


def reordered(trees, model, seed):
    """The noun and verb families of each tree in T_syn's order."""
    out = []
    for t in trees:
        position = {i: k for k, i in enumerate(sx.syntax_order(t, model, seed))}
        kids, _ = sx.children(t)
        for h, deps in enumerate(kids):
            cls = sx.head_class(t.tags[h])
            if cls and deps:
                nodes = sorted(deps + [h], key=position.__getitem__)
                out.append((cls, sx.family_labels(t, h, nodes)))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--train", action="append", required=True, help="French CoNLL-U (repeat)")
    p.add_argument("--held-out", action="append", required=True, help="French CoNLL-U")
    p.add_argument("--english", action="append", default=[], help="English CoNLL-U")
    p.add_argument("--l2", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    fams = [f for path in args.train for t in sx.read_trees(path) for f in sx.families(t)]
    start, cpu = time.time(), time.process_time()
    model, report = train(fams, l2=args.l2)
    report.update(wall_s=round(time.time() - start, 1), cpu_s=round(time.process_time() - cpu, 1))
    held = [f for path in args.held_out for t in sx.read_trees(path) for f in sx.families(t)]
    drawn = sx.sampled_families(model, held, args.seed)
    result = {
        "train": report,
        "held_out": sx.held_out_log_likelihood(model, SideModel.fit(fams), held),
        "french_rates_before_head": {
            label: {
                "french": sx.before_head_rate(held, c, label),
                "sampled": sx.before_head_rate(drawn, c, label),
            }
            for c, label in RATES
        },
    }
    if args.english:
        trees = [t for path in args.english for t in sx.read_trees(path)]
        start, cpu = time.time(), time.process_time()
        after = reordered(trees, model, args.seed)
        before = [f for t in trees for f in sx.families(t)]
        result["english"] = {
            "sentences": len(trees),
            "words": sum(len(t.words) for t in trees),
            "t_syn_wall_s": round(time.time() - start, 1),
            "t_syn_cpu_s": round(time.process_time() - cpu, 1),
            "rates_before_head": {
                label: {
                    "english": sx.before_head_rate(before, c, label),
                    "t_syn": sx.before_head_rate(after, c, label),
                }
                for c, label in RATES
            },
        }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
