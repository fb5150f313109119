#!/usr/bin/env bash
# Evaluate a fine-tuned WMT14 model the way the paper reports it.
#
#   1. average the last --num-update-checkpoints checkpoint_<epoch>_<update>.pt
#      (veco-average-checkpoints; a warning if fewer exist)
#   2. fairseq-generate, beam --beam, --required-batch-size-multiple 1 (fairseq drops
#      a final batch that is not a multiple of it, default 8: every sentence must be
#      translated); the hypothesis count must equal the source sentence count
#   3. hypotheses in original order -> subwords decoded -> <out-dir>/<subset>.hyp.<tgt>
#   4. detokenized sacreBLEU vs the raw references (with its signature), and tokenized
#      BLEU: sacremoses -l <tgt> on both sides, compound splitting (a-b ->
#      a ##AT##-##AT## b), sacreBLEU --tokenize none --force; both into scores.json
#
#   bash scripts/evaluate-wmt14.sh --checkpoint-dir checkpoints/wmt14_en_de \
#       --data-bin data-bin/wmt14_en_de --spm-model pretrained/xlmr.large/sentencepiece.bpe.model
# Arguments after -- go to fairseq-generate (e.g. -- --lenpen 0.6 --fp16).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"  # the project's .venv unless one is active

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CHECKPOINT_DIR=checkpoints/wmt14_en_de
CHECKPOINT=
DATA_BIN=data-bin/wmt14_en_de
RAW_REF=
RAW_SRC=
SPM_MODEL=pretrained/xlmr.large/sentencepiece.bpe.model
SUBWORD=sentencepiece
BEAM=5
MAX_TOKENS=4096
NUM_UPDATE_CHECKPOINTS=10
UPPER_BOUND=
USER_DIR=$ROOT/veco_plugin
OUT_DIR=
SRC=en
TGT=de
GEN_SUBSET="test"
TASK=translation_from_pretrained_veco
PYTHON=python3
EXTRA=()

usage() {
  cat <<EOF
usage: $(basename "$0") [flags] [-- fairseq-generate args]
  --checkpoint-dir DIR        checkpoints to average          [$CHECKPOINT_DIR]
  --num-update-checkpoints N  average the N newest checkpoint_E_U.pt [$NUM_UPDATE_CHECKPOINTS]
  --checkpoint-upper-bound U  ignore checkpoints after update U
  --checkpoint FILE           evaluate FILE as is (no averaging)
  --data-bin DIR              binarized data                  [$DATA_BIN]
  --raw-ref FILE              untokenized references  [<data-bin>/<subset>.raw.<tgt>]
  --raw-src FILE              untokenized sources     [<data-bin>/<subset>.raw.<src>]
  --spm-model FILE            sentencepiece model             [$SPM_MODEL]
  --subword KIND              sentencepiece or fastbpe        [$SUBWORD]
  --beam N                    beam size                       [$BEAM]
  --max-tokens N              fairseq-generate --max-tokens   [$MAX_TOKENS]
  --src L --tgt L             languages                       [$SRC $TGT]
  --gen-subset NAME           subset to translate             [$GEN_SUBSET]
  --task NAME                 fairseq task (translation for a stock model) [$TASK]
  --user-dir DIR              fairseq --user-dir              [$USER_DIR]
  --out-dir DIR               outputs       [<checkpoint-dir>/eval_<subset>]
  --python PY                 Python with veco_plugin installed [$PYTHON]
  -h, --help                  this help
EOF
}

die() { echo "$(basename "$0"): error: $*" >&2; exit 1; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --checkpoint-dir) CHECKPOINT_DIR=$2; shift 2 ;;
    --num-update-checkpoints) NUM_UPDATE_CHECKPOINTS=$2; shift 2 ;;
    --checkpoint-upper-bound) UPPER_BOUND=$2; shift 2 ;;
    --checkpoint) CHECKPOINT=$2; shift 2 ;;
    --data-bin) DATA_BIN=$2; shift 2 ;;
    --raw-ref) RAW_REF=$2; shift 2 ;;
    --raw-src) RAW_SRC=$2; shift 2 ;;
    --spm-model) SPM_MODEL=$2; shift 2 ;;
    --subword) SUBWORD=$2; shift 2 ;;
    --beam) BEAM=$2; shift 2 ;;
    --max-tokens) MAX_TOKENS=$2; shift 2 ;;
    --src) SRC=$2; shift 2 ;;
    --tgt) TGT=$2; shift 2 ;;
    --gen-subset) GEN_SUBSET=$2; shift 2 ;;
    --task) TASK=$2; shift 2 ;;
    --user-dir) USER_DIR=$2; shift 2 ;;
    --out-dir) OUT_DIR=$2; shift 2 ;;
    --python) PYTHON=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) usage >&2; die "unknown flag $1" ;;
  esac
done

RAW_REF=${RAW_REF:-$DATA_BIN/$GEN_SUBSET.raw.$TGT}
RAW_SRC=${RAW_SRC:-$DATA_BIN/$GEN_SUBSET.raw.$SRC}
OUT_DIR=${OUT_DIR:-$CHECKPOINT_DIR/eval_$GEN_SUBSET}
[[ -d "$DATA_BIN" ]] || die "--data-bin $DATA_BIN not found"
[[ -f "$RAW_REF" ]] || die "references $RAW_REF not found (--raw-ref)"
[[ -f "$RAW_SRC" ]] || die "sources $RAW_SRC not found (--raw-src)"
if [[ "$SUBWORD" == sentencepiece ]]; then
  [[ -f "$SPM_MODEL" ]] || die "sentencepiece model $SPM_MODEL not found (--spm-model)"
fi
mkdir -p "$OUT_DIR"

# 1. Average.
if [[ -z "$CHECKPOINT" ]]; then
  CHECKPOINT=$OUT_DIR/averaged.pt
  BOUND=()
  [[ -n "$UPPER_BOUND" ]] && BOUND=(--checkpoint-upper-bound "$UPPER_BOUND")
  veco-average-checkpoints --inputs "$CHECKPOINT_DIR" \
    --num-update-checkpoints "$NUM_UPDATE_CHECKPOINTS" "${BOUND[@]}" \
    --no-optimizer-state --output "$CHECKPOINT"
fi
[[ -f "$CHECKPOINT" ]] || die "checkpoint $CHECKPOINT not found"

# 2. Beam search over every sentence of the subset.
GEN_OUT=$OUT_DIR/generate-$GEN_SUBSET.txt
fairseq-generate "$DATA_BIN" --user-dir "$USER_DIR" --path "$CHECKPOINT" \
  --task "$TASK" --gen-subset "$GEN_SUBSET" --source-lang "$SRC" --target-lang "$TGT" \
  --beam "$BEAM" --nbest 1 --max-tokens "$MAX_TOKENS" \
  --required-batch-size-multiple 1 "${EXTRA[@]}" > "$GEN_OUT" \
  || die "fairseq-generate failed (log: $GEN_OUT)"

# 3 + 4. Order, count check, decode, both BLEU scores.
"$PYTHON" -m veco_plugin.cli.wmt14 score --generate-output "$GEN_OUT" \
  --raw-src "$RAW_SRC" --raw-ref "$RAW_REF" --tgt "$TGT" --subword "$SUBWORD" \
  --spm-model "$SPM_MODEL" --hyp-out "$OUT_DIR/$GEN_SUBSET.hyp.$TGT" \
  --json "$OUT_DIR/scores.json" --checkpoint "$CHECKPOINT"
echo "scores: $OUT_DIR/scores.json"
