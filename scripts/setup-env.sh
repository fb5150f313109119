#!/usr/bin/env bash
# Create a virtual environment with the verified CPU install route:
#   torch (CPU wheel) + fairseq (fairseq-fixed --no-deps on Python 3.11+) + runtime deps + this plugin.
# Usage: scripts/setup-env.sh [--venv DIR] [--python PY] [--torch SPEC]
set -euo pipefail
VENV=.venv
PY=python3
TORCH_SPEC="torch==2.13.0"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --venv) VENV=$2; shift 2 ;;
    --python) PY=$2; shift 2 ;;
    --torch) TORCH_SPEC=$2; shift 2 ;;
    *) echo "setup-env.sh: unknown flag $1 (flags: --venv DIR --python PY --torch SPEC)" >&2; exit 2 ;;
  esac
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [[ ! -x "$VENV/bin/python" ]]; then
  "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip)
"${PIP[@]}" install -q --upgrade pip wheel setuptools
# torch first and pinned, so nothing below can pull a CUDA build.
"${PIP[@]}" install -q "$TORCH_SPEC"
if "$VENV/bin/python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  FAIRSEQ_SPEC="fairseq-fixed==0.12.3.1"
else
  FAIRSEQ_SPEC="fairseq==0.12.2"
fi
# --no-deps: fairseq's metadata asks for torchaudio (which drags in a CUDA torch).
"$VENV/bin/python" -c 'import fairseq' 2>/dev/null || "${PIP[@]}" install -q --no-deps "$FAIRSEQ_SPEC"
"${PIP[@]}" install -q -e "$ROOT[test]" "$TORCH_SPEC"
"$VENV/bin/python" -c 'import torch, fairseq, veco_plugin; print("ok: torch", torch.__version__, "fairseq", fairseq.__version__)'
