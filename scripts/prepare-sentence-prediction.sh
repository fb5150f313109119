#!/usr/bin/env bash
# Sentence(-pair) classification data for --task veco_sentence_prediction.
#
#   scripts/prepare-sentence-prediction.sh --ckpt-data DATA --out data/paraphrase-bin
#       the gettext translation-or-hard-negative task: builds the En-De and En-Fr gettext
#       corpora, the TSVs (train/valid/test_en in English-first, test_de/test_fr German-
#       and French-first, each with its .trans.tsv) and binarizes them
#   scripts/prepare-sentence-prediction.sh --ckpt-data DATA --out data/xnli-bin \
#       --layout xnli --split train=train-en.tsv,translate-train-de.tsv --split test_de=test-de.tsv
#       XTREME TSVs (xnli: premise, hypothesis, label; pawsx: id, sentence1, sentence2, label)
#
# DATA is the pre-training data directory (spm.model, dict.txt) of the checkpoint to fine-tune.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"  # the project's .venv unless one is active

PYTHON=${PYTHON:-python}
CKPT_DATA=""
OUT=""
WORK=""
LAYOUT=""
SPLITS=()
LANGS="de fr"
TRAIN_LANG=de
MAX_TRAIN=""
MAX_EVAL=1000
CANDIDATES=16

usage() { sed -n '2,13p' "$0"; exit 1; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --ckpt-data) CKPT_DATA=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --layout) LAYOUT=$2; shift 2 ;;
    --split) SPLITS+=(--split "$2"); shift 2 ;;
    --langs) LANGS=$2; shift 2 ;;
    --train-lang) TRAIN_LANG=$2; shift 2 ;;
    --max-train) MAX_TRAIN=$2; shift 2 ;;
    --max-eval) MAX_EVAL=$2; shift 2 ;;
    --candidates) CANDIDATES=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "prepare-sentence-prediction.sh: unknown flag $1" >&2; usage ;;
  esac
done
[[ -n "$CKPT_DATA" && -n "$OUT" ]] || usage
for f in spm.model dict.txt; do
  [[ -f "$CKPT_DATA/$f" ]] || { echo "prepare-sentence-prediction.sh: $CKPT_DATA/$f not found (--ckpt-data)" >&2; exit 1; }
done

if [[ -n "$LAYOUT" ]]; then
  exec "$PYTHON" -m veco_plugin.cli.prepare_sentence_prediction --layout "$LAYOUT" \
    --spm-model "$CKPT_DATA/spm.model" --dict "$CKPT_DATA/dict.txt" --output "$OUT" "${SPLITS[@]}"
fi

WORK=${WORK:-$OUT.work}
CORPORA=()
for lang in $LANGS; do
  [[ -f "$WORK/gettext-en-$lang/catalogs.json" ]] || \
    veco-gettext-corpus --tgt-lang "$lang" --output "$WORK/gettext-en-$lang"
  CORPORA+=(--corpus "$lang=$WORK/gettext-en-$lang")
done
"$PYTHON" -m veco_plugin.cli.gettext_paraphrase "${CORPORA[@]}" --train-lang "$TRAIN_LANG" \
  --output "$WORK/tsv" --max-eval "$MAX_EVAL" --candidates "$CANDIDATES" \
  ${MAX_TRAIN:+--max-train "$MAX_TRAIN"}
T=$WORK/tsv
SPLIT_ARGS=(--split "train=$T/train.tsv,$T/train.trans.tsv" --split "valid=$T/valid.tsv,$T/valid.trans.tsv"
  --split "test_en=$T/test_en.tsv,$T/test_en.trans.tsv")
for lang in $LANGS; do
  SPLIT_ARGS+=(--split "test_$lang=$T/test_$lang.tsv,$T/test_$lang.trans.tsv")
done
"$PYTHON" -m veco_plugin.cli.prepare_sentence_prediction --layout pawsx \
  --spm-model "$CKPT_DATA/spm.model" --dict "$CKPT_DATA/dict.txt" --output "$OUT" "${SPLIT_ARGS[@]}"
