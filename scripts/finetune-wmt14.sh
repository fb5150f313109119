#!/usr/bin/env bash
# Fine-tune an initialized VECO encoder-decoder on WMT14 En-De or En-Fr (paper settings).
#
#   Adam (0.9, 0.98), lr 1e-4 (En-De) / 2e-4 (En-Fr), polynomial decay with 16k warm-up
#   updates over 100k updates, dropout 0.3, label smoothing 0.1, clip-norm 1.0,
#   ~64k (En-De) / ~256k (En-Fr) target tokens per update. The tokens per update are
#   reached with --update-freq = ceil(tokens_per_update / (max_tokens * num_gpus)).
#
# The run starts from --restore-file (the checkpoint veco-init-nmt wrote) with the
# optimizer, data loader and meters reset. If <save-dir>/checkpoint_last.pt exists the
# run resumes from it instead (nothing reset), so a restarted job continues.
#
#   bash scripts/finetune-wmt14.sh --pair en-de --data-bin data-bin/wmt14_en_de \
#       --restore-file checkpoints/veco_nmt_init/checkpoint_init.pt --decoder-layers 6
# --decoder-layers must be the count veco-init-nmt --decoder-layers chose (last:6 -> 6;
# the arch default is the encoder depth), --tie-decoder-to-encoder-layers the layers it
# printed for --tie-layers: veco-init-nmt logs the exact fairseq-train flags. A size no
# named arch has: --arch veco_transformer and the printed size flags after --, e.g.
#   ... --arch veco_transformer --decoder-layers 4 -- --encoder-layers 4 \
#       --encoder-embed-dim 256 --encoder-ffn-embed-dim 1024 --encoder-attention-heads 4
# Arguments after -- go to fairseq-train unchanged. --dry-run prints the command.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"  # the project's .venv unless one is active

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PAIR=en-de
DATA_BIN=
SAVE_DIR=
RESTORE_FILE=checkpoints/veco_nmt_init/checkpoint_init.pt
TASK=translation_from_pretrained_veco
ARCH=veco_transformer_large
DECODER_LAYERS=
TIED_LAYERS=
LR=
ADAM_BETAS="(0.9,0.98)"
ADAM_EPS=1e-8
WEIGHT_DECAY=0.0
WARMUP_UPDATES=16000
MAX_UPDATE=100000
DROPOUT=0.3
LABEL_SMOOTHING=0.1
CLIP_NORM=1.0
TOKENS_PER_UPDATE=
MAX_TOKENS=4096
NUM_GPUS=
FP16=auto
SAVE_INTERVAL_UPDATES=1000
KEEP_INTERVAL_UPDATES=10
SEED=1
LOG_INTERVAL=100
USER_DIR=$ROOT/veco_plugin
DRY_RUN=0
EXTRA=()

usage() {
  cat <<EOF
usage: $(basename "$0") [flags] [-- fairseq-train args]
  --pair PAIR                 en-de or en-fr (picks lr and tokens per update) [$PAIR]
  --data-bin DIR              binarized data              [data-bin/wmt14_<pair>]
  --save-dir DIR              checkpoints                 [checkpoints/wmt14_<pair>]
  --restore-file FILE         initial checkpoint (veco-init-nmt) [$RESTORE_FILE]
  --task NAME                 fairseq task                [$TASK]
  --arch NAME                 model architecture          [$ARCH]
  --decoder-layers N          decoder depth of the init checkpoint [arch default]
  --tie-decoder-to-encoder-layers L  encoder layers the decoder layers share (--tie-layers)
  --lr LR                     peak learning rate          [1e-4 en-de, 2e-4 en-fr]
  --adam-betas B              Adam betas                  [$ADAM_BETAS]
  --adam-eps E                Adam epsilon                [$ADAM_EPS]
  --weight-decay W            weight decay                [$WEIGHT_DECAY]
  --warmup-updates N          warm-up updates             [$WARMUP_UPDATES]
  --max-update N              total updates (polynomial decay to 0 at N) [$MAX_UPDATE]
  --dropout P                 dropout                     [$DROPOUT]
  --label-smoothing E         label smoothing             [$LABEL_SMOOTHING]
  --clip-norm C               gradient clipping           [$CLIP_NORM]
  --tokens-per-update N       target tokens per update    [65536 en-de, 262144 en-fr]
  --max-tokens N              tokens per GPU batch        [$MAX_TOKENS]
  --num-gpus N                GPUs used                   [detected, at least 1]
  --fp16 / --no-fp16          mixed precision             [on when a GPU is present]
  --save-interval-updates N   save checkpoint_E_U.pt every N updates [$SAVE_INTERVAL_UPDATES]
  --keep-interval-updates N   keep the last N of those    [$KEEP_INTERVAL_UPDATES]
  --seed N                    random seed                 [$SEED]
  --log-interval N            log every N updates         [$LOG_INTERVAL]
  --user-dir DIR              fairseq --user-dir          [$USER_DIR]
  --dry-run                   print the fairseq-train command, do not run it
  -h, --help                  this help
EOF
}

die() { echo "$(basename "$0"): error: $*" >&2; exit 1; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --pair) PAIR=$2; shift 2 ;;
    --data-bin) DATA_BIN=$2; shift 2 ;;
    --save-dir) SAVE_DIR=$2; shift 2 ;;
    --restore-file) RESTORE_FILE=$2; shift 2 ;;
    --task) TASK=$2; shift 2 ;;
    --arch) ARCH=$2; shift 2 ;;
    --decoder-layers) DECODER_LAYERS=$2; shift 2 ;;
    --tie-decoder-to-encoder-layers) TIED_LAYERS=$2; shift 2 ;;
    --lr) LR=$2; shift 2 ;;
    --adam-betas) ADAM_BETAS=$2; shift 2 ;;
    --adam-eps) ADAM_EPS=$2; shift 2 ;;
    --weight-decay) WEIGHT_DECAY=$2; shift 2 ;;
    --warmup-updates) WARMUP_UPDATES=$2; shift 2 ;;
    --max-update) MAX_UPDATE=$2; shift 2 ;;
    --dropout) DROPOUT=$2; shift 2 ;;
    --label-smoothing) LABEL_SMOOTHING=$2; shift 2 ;;
    --clip-norm) CLIP_NORM=$2; shift 2 ;;
    --tokens-per-update) TOKENS_PER_UPDATE=$2; shift 2 ;;
    --max-tokens) MAX_TOKENS=$2; shift 2 ;;
    --num-gpus) NUM_GPUS=$2; shift 2 ;;
    --fp16) FP16=1; shift ;;
    --no-fp16) FP16=0; shift ;;
    --save-interval-updates) SAVE_INTERVAL_UPDATES=$2; shift 2 ;;
    --keep-interval-updates) KEEP_INTERVAL_UPDATES=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --log-interval) LOG_INTERVAL=$2; shift 2 ;;
    --user-dir) USER_DIR=$2; shift 2 ;;
    --dry-run) DRY_RUN=1; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) usage >&2; die "unknown flag $1" ;;
  esac
done

case "$PAIR" in
  en-de) LR=${LR:-1e-4}; TOKENS_PER_UPDATE=${TOKENS_PER_UPDATE:-65536} ;;
  en-fr) LR=${LR:-2e-4}; TOKENS_PER_UPDATE=${TOKENS_PER_UPDATE:-262144} ;;
  *) die "--pair must be en-de or en-fr, not $PAIR" ;;
esac
SRC=${PAIR%-*}
TGT=${PAIR#*-}
DATA_BIN=${DATA_BIN:-data-bin/wmt14_${SRC}_${TGT}}
SAVE_DIR=${SAVE_DIR:-checkpoints/wmt14_${SRC}_${TGT}}

GPUS_PRESENT=0
if command -v nvidia-smi >/dev/null 2>&1; then
  GPUS_PRESENT=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
fi
NUM_GPUS=${NUM_GPUS:-$GPUS_PRESENT}
(( NUM_GPUS >= 1 )) || NUM_GPUS=1
[[ "$FP16" != auto ]] || { (( GPUS_PRESENT > 0 )) && FP16=1 || FP16=0; }
[[ -z "$DECODER_LAYERS" || "$DECODER_LAYERS" =~ ^[1-9][0-9]*$ ]] \
  || die "--decoder-layers must be a positive integer, not $DECODER_LAYERS"
for n in TOKENS_PER_UPDATE MAX_TOKENS NUM_GPUS; do
  [[ "${!n}" =~ ^[1-9][0-9]*$ ]] || die "--$(echo "$n" | tr 'A-Z_' 'a-z-') must be a positive integer, not ${!n}"
done
PER_STEP=$(( MAX_TOKENS * NUM_GPUS ))
UPDATE_FREQ=$(( (TOKENS_PER_UPDATE + PER_STEP - 1) / PER_STEP ))

if [[ -f "$SAVE_DIR/checkpoint_last.pt" ]]; then
  echo "resuming from $SAVE_DIR/checkpoint_last.pt (not resetting)" >&2
  RESTORE=(--restore-file checkpoint_last.pt)
else
  RESTORE=(--restore-file "$RESTORE_FILE" --reset-optimizer --reset-dataloader --reset-meters)
fi

CMD=(fairseq-train "$DATA_BIN" --user-dir "$USER_DIR"
  --task "$TASK" --arch "$ARCH" --source-lang "$SRC" --target-lang "$TGT"
  "${RESTORE[@]}"
  --optimizer adam --adam-betas "$ADAM_BETAS" --adam-eps "$ADAM_EPS" --weight-decay "$WEIGHT_DECAY"
  --lr "$LR" --lr-scheduler polynomial_decay --warmup-updates "$WARMUP_UPDATES"
  --total-num-update "$MAX_UPDATE" --max-update "$MAX_UPDATE"
  --dropout "$DROPOUT" --criterion label_smoothed_cross_entropy
  --label-smoothing "$LABEL_SMOOTHING" --clip-norm "$CLIP_NORM"
  --max-tokens "$MAX_TOKENS" --update-freq "$UPDATE_FREQ"
  --save-dir "$SAVE_DIR" --save-interval-updates "$SAVE_INTERVAL_UPDATES"
  --keep-interval-updates "$KEEP_INTERVAL_UPDATES"
  --seed "$SEED" --log-interval "$LOG_INTERVAL" --log-format simple)
[[ -n "$DECODER_LAYERS" ]] && CMD+=(--decoder-layers "$DECODER_LAYERS")
[[ -n "$TIED_LAYERS" ]] && CMD+=(--tie-decoder-to-encoder-layers "$TIED_LAYERS")
[[ "$FP16" == 1 ]] && CMD+=(--fp16)
CMD+=("${EXTRA[@]}")

echo "tokens per update: ${MAX_TOKENS} x ${NUM_GPUS} GPU(s) x update-freq ${UPDATE_FREQ} = $(( PER_STEP * UPDATE_FREQ )) (target ${TOKENS_PER_UPDATE})" >&2
if [[ "$DRY_RUN" == 1 ]]; then
  printf '%q ' "${CMD[@]}"
  echo
  exit 0
fi
[[ -d "$DATA_BIN" ]] || die "--data-bin $DATA_BIN not found"
[[ "${RESTORE[1]}" == checkpoint_last.pt || -f "$RESTORE_FILE" ]] \
  || die "initial checkpoint $RESTORE_FILE not found (--restore-file; make it with veco-init-nmt)"
mkdir -p "$SAVE_DIR"
"${CMD[@]}"
