#!/usr/bin/env bash
# benchmarks/gpu.py on the device machine (benchmarks/GPU.md): its Python 3.12 has torch but
# no fairseq and no internet, so the wheels of .whl/ (benchmarks/gpu_wheels.sh, carried)
# and this checkout (editable) go into that Python once per machine; then gpu.py.
#   bash benchmarks/gpu.sh --out "$OUT" [--previous benchmarks/results/X.json] [--stages ...]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=python3
# into the image's own environment (the machine is bare and given back after): the
# tests run console scripts (veco-align, fairseq-train) from beside the interpreter
if ! "$PY" -c 'import fairseq' 2>/dev/null; then
  if ! compgen -G ".whl/*.whl" >/dev/null; then
    echo "gpu.sh: no .whl/*.whl: run 'bash benchmarks/gpu_wheels.sh' here and carry .whl" >&2
    exit 2
  fi
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-build-isolation -e .
fi
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
"$PY" -c 'import torch, numpy, fairseq, veco_plugin; print("torch", torch.__version__, "numpy", numpy.__version__, "fairseq", fairseq.__version__)'
exec "$PY" benchmarks/gpu.py "$@"
