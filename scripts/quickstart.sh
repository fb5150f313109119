#!/usr/bin/env bash
# Quickstart: the paper's NMT initialization comparison (Table 3 and its learning curve) at toy
# scale, end to end on local data. The orchestration is the package veco_plugin/quickstart/
# (stages, JSON stamps, worker pool, report); this wrapper keeps the familiar command:
#
#   bash scripts/quickstart.sh --run-dir runs/quickstart        # (= make quickstart)
#   bash scripts/quickstart.sh --help                           # every flag
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"  # the project's .venv unless one is active
exec python -m veco_plugin.quickstart "$@"
