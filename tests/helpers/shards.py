"""Small sharded pre-training DATA cut from a prepared DATA's encoded text."""

import os
import subprocess
import sys
from typing import Dict, Iterable, List

from tests.helpers.runner import json_logs, pretrain_args

PREPROCESS = """
import sys
from fairseq import options
from fairseq_cli.preprocess import main
for line in sys.stdin:
    main(options.get_preprocessing_parser().parse_args(line.split()))
"""


def _cut(src: str, dst: str, start: int, count: int) -> None:
    with open(src, encoding="utf-8") as f:
        lines = f.readlines()[start : start + count]
    with open(dst, "w", encoding="utf-8") as f:
        f.writelines(lines)


def make_shards(data: str, out: str, shards: int, lines: int) -> List[str]:
    """``out/shard0 ... out/shard<N-1>``: ``lines`` consecutive training lines each of
    ``data``'s En/De monolingual and En-De text (``data/text/*.spm.*``, the encoded text
    of scripts/prepare-pretraining-data.sh), binarized with ``data/dict.txt``; the
    validation split (its first ``lines`` pairs) in shard0 only."""
    text = os.path.join(out, "text")
    os.makedirs(text, exist_ok=True)
    dictionary = os.path.join(data, "dict.txt")
    commands, paths = [], []
    for k in range(shards):
        shard = os.path.join(out, f"shard{k}")
        paths.append(shard)
        os.makedirs(shard, exist_ok=True)
        with open(dictionary, encoding="utf-8") as f, open(
            os.path.join(shard, "dict.txt"), "w", encoding="utf-8"
        ) as g:
            g.write(f.read())
        for lang in ("en", "de"):
            for kind in ("mono", "train"):
                src = os.path.join(data, "text", f"{kind}.spm.{lang}")
                _cut(src, os.path.join(text, f"{kind}{k}.{lang}"), k * lines, lines)
            _cut(os.path.join(data, "text", f"valid.spm.{lang}"), f"{text}/valid.{lang}", 0, lines)
        valid = f"--validpref {text}/valid" if k == 0 else ""
        for lang in ("en", "de"):
            valid_mono = f"--validpref {text}/valid.{lang}" if k == 0 else ""
            commands.append(
                f"--only-source --srcdict {dictionary} --trainpref {text}/mono{k}.{lang} "
                f"{valid_mono} --destdir {shard}/mono/{lang}"
            )
        commands.append(
            f"--source-lang en --target-lang de --srcdict {dictionary} --tgtdict {dictionary} "
            f"--trainpref {text}/train{k} {valid} --destdir {shard}/bi/en-de"
        )
    subprocess.run(
        [sys.executable, "-c", PREPROCESS],
        input="\n".join(commands) + "\n",
        text=True,
        check=True,
        capture_output=True,
    )
    return paths


def shard_train_args(data: str, save_dir: str, updates: int, *extra) -> List[str]:
    """``fairseq-train`` arguments of a run over ``make_shards``'s shards: ``ca_mlm``, a
    loss logged at every update, dropout off (so that one process with ``--update-freq
    2`` and two ranks of one batch each compute the same updates), no validation."""
    return pretrain_args(
        data,
        str(save_dir),
        "ca_mlm",
        updates,
        "--log-interval",
        "1",
        "--dropout",
        "0",
        "--attention-dropout",
        "0",
        "--disable-validation",
        "--max-tokens",
        "600",
        *extra,
    )


def losses(output: str) -> Dict[int, float]:
    """Training loss by update number, from fairseq-train's JSON log ``output``."""
    return {int(r["num_updates"]): float(r["loss"]) for r in json_logs(output)}


def assert_same_losses(got: Dict[int, float], want: Dict[int, float], updates: Iterable[int]):
    """``got`` equals ``want`` at every update of ``updates`` (1e-3 relative: fp32
    reduction order)."""
    for u in updates:
        assert abs(got[u] - want[u]) < 1e-3 * want[u], (u, got[u], want[u])
