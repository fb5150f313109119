#!/usr/bin/env bash
# benchmarks/gpu.py on the device machine (benchmarks/GPU.md): its Python 3.12 has torch but
# no fairseq and no internet, so the wheels of .whl/ (benchmarks/gpu_wheels.sh, carried)
# go into /tmp/site once per machine; then gpu.py with the flags given.
#   bash benchmarks/gpu.sh --out "$OUT" [--previous benchmarks/results/X.json] [--stages ...]
set -euo pipefail
cd "$(dirname "$0")/.."
SITE=/tmp/site
PY=python3
if [[ ! -d $SITE/fairseq ]]; then
  if ! compgen -G ".whl/*.whl" >/dev/null; then
    echo "gpu.sh: no .whl/*.whl: run 'bash benchmarks/gpu_wheels.sh' here and carry .whl" >&2
    exit 2
  fi
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" .whl/*.whl
fi
export PYTHONPATH=$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH} PATH=$SITE/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
"$PY" -c 'import torch, numpy, fairseq, veco_plugin; print("torch", torch.__version__, "numpy", numpy.__version__, "fairseq", fairseq.__version__)'
exec "$PY" benchmarks/gpu.py "$@"
