"""Small sharded pre-training DATA cut from a prepared DATA's encoded text."""

import os
import subprocess
import sys
from typing import List

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
