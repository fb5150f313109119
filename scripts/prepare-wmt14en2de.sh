#!/usr/bin/env bash
# WMT14 English-German for fine-tuning VECO as a translation model.
#
#   train  Europarl v7 + Common Crawl + News Commentary v9 (cleaned)
#   valid  newstest2013
#   test   newstest2014 'full' (test-full/newstest2014-deen-{src.en,ref.de}.sgm)
#
# scripts/prepare-wmt14en2fr.sh runs this script with --pair en-fr: train adds UN and
# Gigaword 10^9 (giga-fren), valid is newstest2012 + newstest2013.
#
# Steps: fetch the statmt.org archives into --raw-dir unless they (or their extracted
# files) are already there; read + check + clean + subword-encode (veco-wmt14, i.e.
# veco_plugin/corpora/wmt14.py);
# fairseq-preprocess with the pre-trained model's dictionary (--joined-dictionary
# --srcdict). The untokenized valid/test text stays next to the binarized data as
# {valid,test}.raw.{en,de}: the references for sacreBLEU (scripts/evaluate-wmt14.sh).
#
#   bash scripts/prepare-wmt14en2de.sh --raw-dir /data/wmt14 \
#       --spm-model pretrained/xlmr.large/sentencepiece.bpe.model \
#       --dict pretrained/xlmr.large/dict.txt --dest-dir data-bin/wmt14_en_de
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"  # the project's .venv unless one is active

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PAIR=en-de
RAW_DIR=
TMP_DIR=
DEST_DIR=
SPM_MODEL=pretrained/xlmr.large/sentencepiece.bpe.model
BPE_CODES=
BPE_VOCAB=
DICT=pretrained/xlmr.large/dict.txt
WORKERS=$(nproc 2>/dev/null || echo 1)
MIN_LEN=1
MAX_LEN=250
RATIO=1.5
BAD_UTF8=error
DOWNLOAD=1
PYTHON=python3
USER_DIR=$ROOT/veco_plugin

usage() {
  cat <<EOF
usage: $(basename "$0") [flags]
  --pair PAIR        en-de or en-fr                          [$PAIR]
  --raw-dir DIR      statmt.org archives or their extracted files; missing ones are
                     downloaded here unless --no-download   [data/wmt14_<pair>/orig]
  --tmp-dir DIR      extracted members and subword text      [data/wmt14_<pair>/tmp]
  --dest-dir DIR     fairseq-preprocess output + raw valid/test text
                                                             [data-bin/wmt14_<pair>]
  --spm-model FILE   sentencepiece model (XLM-R style)       [$SPM_MODEL]
  --bpe-codes FILE   fastBPE codes instead of --spm-model (needs the fastBPE module)
  --bpe-vocab FILE   fastBPE vocabulary (optional, with --bpe-codes)
  --dict FILE        pre-trained dictionary for --srcdict   [$DICT]
  --workers N        sentencepiece threads and fairseq-preprocess workers [$WORKERS]
  --min-len N        train: min subword tokens per side      [$MIN_LEN]
  --max-len N        train: max subword tokens per side      [$MAX_LEN]
  --ratio R          train: max length ratio of the sides    [$RATIO]
  --bad-utf8 MODE    error (report file and line) or drop    [$BAD_UTF8]
  --no-download      never download; fail if an archive is missing
  --python PY        Python with veco_plugin installed       [$PYTHON]
  --user-dir DIR     fairseq --user-dir                      [$USER_DIR]
  -h, --help         this help
EOF
}

die() { echo "$(basename "$0"): error: $*" >&2; exit 1; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --pair) PAIR=$2; shift 2 ;;
    --raw-dir) RAW_DIR=$2; shift 2 ;;
    --tmp-dir) TMP_DIR=$2; shift 2 ;;
    --dest-dir) DEST_DIR=$2; shift 2 ;;
    --spm-model) SPM_MODEL=$2; shift 2 ;;
    --bpe-codes) BPE_CODES=$2; shift 2 ;;
    --bpe-vocab) BPE_VOCAB=$2; shift 2 ;;
    --dict) DICT=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --min-len) MIN_LEN=$2; shift 2 ;;
    --max-len) MAX_LEN=$2; shift 2 ;;
    --ratio) RATIO=$2; shift 2 ;;
    --bad-utf8) BAD_UTF8=$2; shift 2 ;;
    --no-download) DOWNLOAD=0; shift ;;
    --python) PYTHON=$2; shift 2 ;;
    --user-dir) USER_DIR=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown flag $1" ;;
  esac
done

case "$PAIR" in
  en-de|en-fr) ;;
  *) die "--pair must be en-de or en-fr, not $PAIR" ;;
esac
SRC=${PAIR%-*}
TGT=${PAIR#*-}
NAME=wmt14_${SRC}_${TGT}
RAW_DIR=${RAW_DIR:-data/$NAME/orig}
TMP_DIR=${TMP_DIR:-data/$NAME/tmp}
DEST_DIR=${DEST_DIR:-data-bin/$NAME}

# Check everything the user named before any long-running step.
if [[ -n "$BPE_CODES" ]]; then
  [[ -f "$BPE_CODES" ]] || die "BPE codes $BPE_CODES not found (--bpe-codes)"
  "$PYTHON" -c 'import fastBPE' 2>/dev/null \
    || die "--bpe-codes needs the fastBPE Python module, which is not installed (pip install fastBPE, or use --spm-model)"
  SUBWORD=(--bpe-codes "$BPE_CODES")
  [[ -n "$BPE_VOCAB" ]] && SUBWORD+=(--bpe-vocab "$BPE_VOCAB")
else
  [[ -f "$SPM_MODEL" ]] || die "sentencepiece model $SPM_MODEL not found (--spm-model)"
  SUBWORD=(--spm-model "$SPM_MODEL")
fi
[[ -f "$DICT" ]] || die "dictionary $DICT not found (--dict)"
command -v fairseq-preprocess >/dev/null || die "fairseq-preprocess not on PATH (activate the venv)"
WMT14=("$PYTHON" -m veco_plugin.cli.wmt14 --prog "$(basename "$0")")  # veco-wmt14, --python

# 1. Download what is missing (--no-download: veco-wmt14 prepare refuses what is missing).
mkdir -p "$RAW_DIR" "$TMP_DIR" "$DEST_DIR"
NO_DOWNLOAD=(--no-download)
if [[ "$DOWNLOAD" == 1 ]]; then
  NO_DOWNLOAD=()
  "${WMT14[@]}" missing --pair "$PAIR" --raw-dir "$RAW_DIR" > "$TMP_DIR/missing.txt" \
    || die "cannot inspect --raw-dir $RAW_DIR"
  while IFS=$'\t' read -r archive url; do
    [[ -n "$archive" ]] || continue
    echo "downloading $url" >&2
    if command -v curl >/dev/null; then
      curl -fL --retry 3 -o "$RAW_DIR/$archive.part" "$url" || die "download of $url failed; put $archive into --raw-dir"
    else
      wget -q -O "$RAW_DIR/$archive.part" "$url" || die "download of $url failed; put $archive into --raw-dir"
    fi
    mv "$RAW_DIR/$archive.part" "$RAW_DIR/$archive"
  done < "$TMP_DIR/missing.txt"
fi

# 2. Extract, check, clean (train only), encode; raw valid/test into DEST_DIR.
"${WMT14[@]}" prepare --pair "$PAIR" --raw-dir "$RAW_DIR" --work-dir "$TMP_DIR" \
  --dest-dir "$DEST_DIR" "${SUBWORD[@]}" --min-len "$MIN_LEN" --max-len "$MAX_LEN" \
  --ratio "$RATIO" --workers "$WORKERS" --bad-utf8 "$BAD_UTF8" "${NO_DOWNLOAD[@]}"

# 3. Binarize with the pre-trained dictionary, shared by both sides.
fairseq-preprocess --user-dir "$USER_DIR" --source-lang "$SRC" --target-lang "$TGT" \
  --trainpref "$TMP_DIR/train" --validpref "$TMP_DIR/valid" --testpref "$TMP_DIR/test" \
  --destdir "$DEST_DIR" --joined-dictionary --srcdict "$DICT" --workers "$WORKERS"

for split in valid test; do
  n_raw=$(wc -l < "$DEST_DIR/$split.raw.$TGT")
  n_sub=$(wc -l < "$TMP_DIR/$split.$TGT")
  [[ "$n_raw" == "$n_sub" ]] || die "$split: $n_raw raw references but $n_sub encoded lines"
done
echo "done: $DEST_DIR ($(wc -l < "$TMP_DIR/train.$SRC") train pairs, $(wc -l < "$DEST_DIR/valid.raw.$TGT") valid, $(wc -l < "$DEST_DIR/test.raw.$TGT") test)"
