#!/usr/bin/env bash
# Create a virtual environment with the verified CPU install route: torch (CPU wheel) with
#   fairseq's build requirements; this plugin with its runtime deps (fairseq's among them)
#   while fairseq's wheel is built beside it; fairseq (fairseq-fixed on Python 3.11+), last
#   and with --no-deps.
# fairseq-fixed 0.12.3.1 has prebuilt wheels on PyPI for CPython 3.12 only: on 3.11 pip
# compiles its Cython and C++ extensions from the sdist, against the venv's own torch (no
# build isolation, so no second torch is downloaded into a throw-away build environment).
# Measured on 2 cores shared with a test suite: that compile alone 79 s (121-134 s with
# Python's default -g); `make setup` from a clean clone 3.5-4.7 min with pip's cache empty,
# 1.1-1.5 min warm (docs/install.md, "Set-up on a fresh machine: two commands").
# Usage: scripts/setup-env.sh [--venv DIR] [--python PY] [--torch SPEC]
#   --venv DIR     the virtual environment to create or complete (default: .venv)
#   --python PY    the interpreter that creates it (default: python3)
#   --torch SPEC   the torch requirement, installed first (default: torch==2.13.0)
set -euo pipefail
VENV=.venv
PY=python3
TORCH_SPEC="torch==2.13.0"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --venv) VENV=$2; shift 2 ;;
    --python) PY=$2; shift 2 ;;
    --torch) TORCH_SPEC=$2; shift 2 ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    *) echo "setup-env.sh: unknown flag $1 (flags: --venv DIR --python PY --torch SPEC)" >&2; exit 2 ;;
  esac
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [[ ! -x "$VENV/bin/python" ]]; then
  "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip)
"${PIP[@]}" install -q --upgrade pip wheel setuptools
if "$VENV/bin/python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  FAIRSEQ_SPEC="fairseq-fixed==0.12.3.1"
else
  FAIRSEQ_SPEC="fairseq==0.12.2"
fi
# What fairseq's build imports (its pyproject.toml: setuptools, wheel, cython, numpy, torch;
# numpy<2 as setup.py pins it for the plugin), installed before it is built.
FAIRSEQ_BUILD_REQS=(setuptools wheel cython "numpy<2" "$TORCH_SPEC")
# fairseq's declared runtime requirements that the plugin does not list itself (all of them
# but torchaudio, which fairseq's text tasks never import and which would pull a CUDA torch).
FAIRSEQ_RUNTIME_REQS=(cffi packaging)
# torch first and pinned (with the build requirements), so nothing below can pull a CUDA build.
"${PIP[@]}" install -q "${FAIRSEQ_BUILD_REQS[@]}"
BUILD_PID=
if ! "$VENV/bin/python" -c 'import fairseq' 2>/dev/null; then
  WHEELHOUSE=$(mktemp -d)
  trap '[[ -z $BUILD_PID ]] || kill "$BUILD_PID" 2>/dev/null; rm -rf "$WHEELHOUSE"' EXIT
  # fairseq's wheel: PyPI's for this Python where there is one (pip prefers it to the sdist;
  # fairseq-fixed 0.12.3.1 has CPython 3.12 wheels only), pip's cached build of an earlier
  # set-up, else a build of the sdist against the venv's torch: --no-build-isolation with
  # its build requirements installed above (--check-build-dependencies fails loudly if one
  # is missing). -g0: no debug information (Python's CFLAGS otherwise, -O3 kept) halves the
  # compile. It runs in the background, beside the plugin's install below; its output is
  # not redirected, so a failing build prints pip's error.
  echo "setup-env.sh: building $FAIRSEQ_SPEC's wheel beside the plugin's install (where neither PyPI nor pip's cache has one for this Python: a compile of about 1.5 min on 2 cores, more when they are busy)"
  CFLAGS=${CFLAGS-"$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_config_var("CFLAGS") or "")') -g0"} \
    "${PIP[@]}" wheel -q --no-deps --no-build-isolation --check-build-dependencies \
    -w "$WHEELHOUSE" "$FAIRSEQ_SPEC" &
  BUILD_PID=$!
fi
# The plugin and its runtime deps (fairseq's among them) before fairseq, which comes last and
# with --no-deps. --no-warn-conflicts: pip's after-install report checks the packages this
# install touches and those that depend on them, so on a venv that has fairseq already (a
# re-run) it would print "ERROR: pip's dependency resolver ..." for the torchaudio left out;
# the `pip check` below checks every installed package instead, and prints all it finds but
# that one omission.
# setuptools' build backend, building the editable wheel, emits a notice that pip relays on
# stderr as a box (`BuildBackendWarning: Editable installation.` and ten lines of `!!` and
# `****` saying that a folder named like the package in the working directory may shadow it):
# information, not a problem, so that box alone is dropped; any other line still reaches stderr.
quiet_editable_notice() {
  awk '
    /BuildBackendWarning: Editable installation\.$/ { box = 1; next }
    box && (/^[[:space:]]*(!!|\*+)?[[:space:]]*$/ || /Please be careful with folders in your working directory/ \
            || /name as your package as they may take precedence during imports/ \
            || /with strategy, WheelFile\(/) { next }
    { box = 0; print; fflush() }'
}
"${PIP[@]}" install -q --no-warn-conflicts -e "$ROOT[test]" "$TORCH_SPEC" "${FAIRSEQ_RUNTIME_REQS[@]}" \
  2> >(quiet_editable_notice >&2)
# The one-line Ctrl-C during a command's first seconds (veco_plugin_startup.py) is started by
# a .pth file beside the packages: a wheel of the plugin holds it (setup.py), the editable
# install's does not, so it is copied there (it does nothing once the plugin is uninstalled).
"$VENV/bin/python" -c 'import shutil, sys, sysconfig; shutil.copy(sys.argv[1], sysconfig.get_paths()["purelib"])' \
  "$ROOT/veco_plugin_startup.pth"
if [[ -n $BUILD_PID ]]; then
  # --no-deps: fairseq's metadata asks for torchaudio (which drags in a CUDA torch).
  wait "$BUILD_PID" || { BUILD_PID=; echo "setup-env.sh: building $FAIRSEQ_SPEC failed (pip's error above)" >&2; exit 1; }
  BUILD_PID=
  "${PIP[@]}" install -q --no-deps "$WHEELHOUSE"/*.whl
fi
# pip check: every requirement of every installed package is met but fairseq's torchaudio
# (left out on purpose, see above); anything else it finds is printed as pip words it.
TORCHAUDIO_LEFT_OUT='^fairseq(-fixed)? [0-9.]+ requires torchaudio, which is not installed\.$'
check=$("${PIP[@]}" check 2>&1) || true
if grep -q -E "$TORCHAUDIO_LEFT_OUT" <<<"$check"; then
  echo "setup-env.sh: torchaudio, which $FAIRSEQ_SPEC declares, is left out on purpose (it pulls a CUDA torch; fairseq's text tasks never import it)"
fi
grep -v -E -e "$TORCHAUDIO_LEFT_OUT" -e '^No broken requirements found\.$' <<<"$check" >&2 || true
"$VENV/bin/python" -c 'import torch, fairseq, veco_plugin; print("ok: torch", torch.__version__, "fairseq", fairseq.__version__)'
