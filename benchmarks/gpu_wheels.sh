#!/usr/bin/env bash
# Fill .whl/ (git-ignored) with what the device machine lacks for benchmarks/gpu.py: its
# image has Python 3.12, torch, sentencepiece, pytest..., no fairseq, and no internet. Run
# here, where pip reaches the registry; the device call carries .whl (benchmarks/GPU.md).
#   fairseq-fixed   fairseq 0.12 built for CPython 3.12 (as scripts/setup-env.sh installs it)
#   hydra-core, omegaconf, antlr4-python3-runtime, bitarray   fairseq's own needs
#   numpy: the image's numpy 2 serves (numpy 1.26 there breaks the image's scipy and
#   scikit-learn, which fairseq's task registry imports)
# antlr4-python3-runtime 4.9.3 is a source release: built here into a pure-Python wheel.
# Usage: bash benchmarks/gpu_wheels.sh [--python PY]   (about 38 MB)
set -euo pipefail
PY=.venv/bin/python
while [[ $# -gt 0 ]]; do
  case "$1" in
    --python) PY=$2; shift 2 ;;
    *) echo "gpu_wheels.sh: unknown flag $1 (flags: --python PY)" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
OUT=.whl
mkdir -p "$OUT"
"$PY" -m pip download -q --no-deps --only-binary=:all: -d "$OUT" \
  --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  fairseq-fixed==0.12.3.1 hydra-core==1.3.2 omegaconf==2.3.0 bitarray==3.12.3
"$PY" -m pip wheel -q --no-deps -w "$OUT" antlr4-python3-runtime==4.9.3
# the set installs on the device's Python (tags checked here, nothing written)
"$PY" -m pip install -q --dry-run --no-index --no-deps --target "$(mktemp -d)" \
  --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --only-binary=:all: \
  "$OUT"/*.whl
du -sh "$OUT"
