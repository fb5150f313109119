#!/usr/bin/env bash
# WMT14 English-French for fine-tuning VECO as a translation model.
#
#   train  Europarl v7 + Common Crawl + News Commentary v9 + UN (undoc.2000)
#          + Gigaword 10^9 (giga-fren.release2.fixed), cleaned
#   valid  newstest2012 + newstest2013
#   test   newstest2014 'full' (test-full/newstest2014-fren-{src.en,ref.fr}.sgm)
#
# Same steps and flags as scripts/prepare-wmt14en2de.sh (see its --help), which this
# script runs with --pair en-fr; the defaults become data/wmt14_en_fr/{orig,tmp} and
# data-bin/wmt14_en_fr.
#
#   bash scripts/prepare-wmt14en2fr.sh --raw-dir /data/wmt14 \
#       --spm-model pretrained/xlmr.large/sentencepiece.bpe.model \
#       --dict pretrained/xlmr.large/dict.txt --dest-dir data-bin/wmt14_en_fr
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"  # the project's .venv unless one is active

for arg in "$@"; do
  [[ "$arg" != --pair ]] || { echo "$(basename "$0"): error: --pair is fixed to en-fr here" >&2; exit 1; }
done
exec bash "$(dirname "${BASH_SOURCE[0]}")/prepare-wmt14en2de.sh" --pair en-fr "$@"
