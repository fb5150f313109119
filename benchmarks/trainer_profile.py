"""Where an update's CPU time goes, for rows of ``trainer_speed.py``: ``torch.profiler`` over
``Trainer.train_step`` (fairseq's own Trainer, built from the row's ``fairseq-train`` command
line), self CPU time per operator.

    python benchmarks/trainer_profile.py --data DATA [--rows mlm,masked_lm] [--updates 4]

``trainer_speed.py``'s other flags (sizes, ``--max-tokens``, ``--positions``, ...) pass through.
"""

import argparse
import os
import sys
import tempfile

from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trainer_speed  # noqa: E402


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", default="mlm,masked_lm")
    p.add_argument("--updates", type=int, default=4, help="profiled updates (after 2)")
    p.add_argument("--top", type=int, default=14, help="operators shown per row")
    ours, rest = p.parse_known_args(argv)
    if ours.updates < 1:
        p.error(f"--updates {ours.updates}: profile at least one update")
    known = set(trainer_speed.ROWS) | set(trainer_speed.MORE_ROWS)
    unknown = [row for row in ours.rows.split(",") if row not in known]
    if unknown:
        p.error(f"--rows {','.join(unknown)}: not a row; choose from {', '.join(sorted(known))}")
    a = trainer_speed.parse_args(rest)
    for row in ours.rows.split(","):
        with tempfile.TemporaryDirectory() as save:
            built = trainer_speed.Built(trainer_speed.command(row, a, a.data, save))
            samples = [next(built.batches) for _ in range(2 + ours.updates)]
            for sample in samples[:2]:
                built.step(sample)
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                for sample in samples[2:]:
                    built.step(sample)
        print(f"== {row}: {ours.updates} updates")
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=ours.top))


if __name__ == "__main__":
    main()
