#!/usr/bin/env bash
# Stage: raw parallel + monolingual text -> joint sentencepiece model -> DATA/ for veco_pretraining.
#
#   TEXT/train.{src,tgt} valid.{src,tgt}   line-aligned translation pairs
#   TEXT/mono.{src,tgt}                    optional monolingual text (default: the train sides)
#   TEXT/train.align valid.align           optional word alignments (WEAM): Pharaoh `i-j ...`, one
#                                          line per pair, 0-based whitespace-separated words;
#                                          --align-with eflomal computes those missing
# writes
#   DATA/spm.model DATA/dict.txt DATA/mono/<lang>/ DATA/bi/<src>-<tgt>/  (+ DATA/text/*.spm.* encoded text)
#   with alignments also DATA/bi/<src>-<tgt>/<split>.align.<src>-<tgt>.{bin,idx} (--align-suffix)
# Text that is not UTF-8 (file and line named), sides with different line counts and a
# --vocab-size the text cannot support (the largest that works named) stop it before any work.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"  # the project's .venv unless one is active
TEXT=""; DATA=""; SRC=en; TGT=de; VOCAB=4000; SPM_MODEL=""; WORKERS=2; ALIGN_WITH=""
PY=${PYTHON:-python}
die() { echo "$(basename "$0"): error: $*" >&2; exit 1; }
usage() { echo "usage: $0 --text DIR --out DATA [--src en] [--tgt de] [--vocab-size 4000] [--spm-model M] [--workers 2] [--align-with eflomal]"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --text) TEXT=$2; shift 2 ;;
    --out) DATA=$2; shift 2 ;;
    --src) SRC=$2; shift 2 ;;
    --tgt) TGT=$2; shift 2 ;;
    --vocab-size) VOCAB=$2; shift 2 ;;
    --spm-model) SPM_MODEL=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --align-with) ALIGN_WITH=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "prepare-pretraining-data.sh: unknown flag $1" >&2; usage >&2; exit 2 ;;
  esac
done
[[ -n "$TEXT" && -n "$DATA" ]] || { usage >&2; exit 2; }
for f in train.$SRC train.$TGT valid.$SRC valid.$TGT; do
  [[ -s "$TEXT/$f" ]] || die "$TEXT/$f is missing or empty (--text)"
done
[[ -z "$ALIGN_WITH" || "$ALIGN_WITH" == eflomal ]] || die "--align-with $ALIGN_WITH: only eflomal is supported"
for split in train valid; do
  [[ -f "$TEXT/$split.align" ]] || continue
  n=$(wc -l < "$TEXT/$split.align"); m=$(wc -l < "$TEXT/$split.$SRC")
  [[ "$n" == "$m" ]] || die "$TEXT/$split.align has $n lines but $TEXT/$split.$SRC has $m: one Pharaoh line per pair (empty when unaligned)"
done
mono() { if [[ -s "$TEXT/mono.$1" ]]; then echo "$TEXT/mono.$1"; else echo "$TEXT/train.$1"; fi; }

# Check the text, train the joint model (unless --spm-model or DATA/spm.model is there),
# encode, write DATA/dict.txt: one `veco-spm prepare` (veco_plugin/corpora), which prints
# the "== ..." steps and names this script in its errors.
TRAIN=()
if [[ -z "$SPM_MODEL" ]]; then
  SPM_MODEL=$DATA/spm.model
  [[ -s "$SPM_MODEL" ]] || TRAIN=(--train-vocab-size "$VOCAB" --train-inputs "$(mono "$SRC")" \
    "$(mono "$TGT")" "$TEXT/train.$SRC" "$TEXT/train.$TGT")
fi
[[ -s "$SPM_MODEL" || ${#TRAIN[@]} -gt 0 ]] || die "--spm-model $SPM_MODEL not found"
"$PY" -m veco_plugin.cli.spm --prog "$(basename "$0")" prepare --model "$SPM_MODEL" "${TRAIN[@]}" \
  --workers "$WORKERS" \
  --parallel "$TEXT/train.$SRC" "$TEXT/train.$TGT" --parallel "$TEXT/valid.$SRC" "$TEXT/valid.$TGT" \
  --files "$(mono "$SRC")" "$(mono "$TGT")" --dict "$DATA/dict.txt" --encode \
  "$TEXT/train.$SRC" "$DATA/text/train.spm.$SRC" "$TEXT/train.$TGT" "$DATA/text/train.spm.$TGT" \
  "$TEXT/valid.$SRC" "$DATA/text/valid.spm.$SRC" "$TEXT/valid.$TGT" "$DATA/text/valid.spm.$TGT" \
  "$(mono "$SRC")" "$DATA/text/mono.spm.$SRC" "$(mono "$TGT")" "$DATA/text/mono.spm.$TGT"

# Word alignments (WEAM) next to the encoded text, where --align-suffix looks for them.
ALIGN=()
for split in train valid; do
  rm -f "$DATA/text/$split.spm.align"
  if [[ -f "$TEXT/$split.align" ]]; then
    cp "$TEXT/$split.align" "$DATA/text/$split.spm.align"
  elif [[ "$ALIGN_WITH" == eflomal ]]; then
    echo "== aligning $split with eflomal"
    "$PY" -c 'import sys; from veco_plugin.data.word_links import align_with_eflomal as a; a(*sys.argv[1:])' \
      "$TEXT/$split.$SRC" "$TEXT/$split.$TGT" "$DATA/text/$split.spm.align"
  fi
  if [[ -f "$DATA/text/$split.spm.align" ]]; then ALIGN=(--align-suffix align); fi
done

# fairseq-preprocess --srcdict's files, byte for byte, in one process (three
# fairseq-preprocess calls took 4-7x as long: veco_plugin/prepare/binarize.py)
"$PY" -m veco_plugin.cli.spm --prog "$(basename "$0")" binarize --dict "$DATA/dict.txt" \
  --text "$DATA/text" --destdir "$DATA" --mono "$SRC" --mono "$TGT" --bi "$SRC" "$TGT" "${ALIGN[@]}"
echo "== DATA ready: $DATA (dict $(wc -l < "$DATA/dict.txt") types)"
