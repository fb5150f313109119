#!/usr/bin/env bash
# Quickstart: the paper's NMT initialization comparison (Table 3 and its learning curve) at toy
# scale, end to end on local data; sized for 2 CPU cores by default (about half an hour).
#
#   corpus         veco-gettext-corpus: en-de pairs from the system's gettext catalogs, held-out
#                  valid/test split by catalog, plus the monolingual sides      -> RUN/text
#   data           scripts/prepare-pretraining-data.sh (joint sentencepiece; mono + bi data for
#                  veco_pretraining) and fairseq-preprocess --joined-dictionary --srcdict
#                  DATA/dict.txt of train/valid/test for translation     -> RUN/data, RUN/nmt-bin
#   pretrain-veco  fairseq-train --task veco_pretraining --criterion ca_mlm (CA-MLM + TLM)
#   pretrain-xlm   the same with --criterion tlm: the XLM row (--no-xlm skips it)
#   init-*         veco-init-nmt: pre-trained encoder -> veco_transformer checkpoint
#   finetune-*     fairseq-train --task translation_from_pretrained_veco; the same architecture
#                  and budget from veco, xlm and random initialization; every --eval-interval
#                  updates a checkpoint, the valid loss and greedy valid BLEU (fairseq --eval-bleu)
#   eval-*         scripts/evaluate-wmt14.sh: average the last --average-last checkpoints, beam
#                  --beam over every test sentence, detokenized sacreBLEU (with signature) and
#                  tokenized BLEU                                          -> RUN/eval/<init>
#   pretrain-dwa   XLM-Align: fairseq-train --criterion dwa from the pretrain-veco checkpoint
#                  (its cold start), --dwa-updates updates (0 skips the alignment stages)
#   align          veco-align on the first --align-pairs test pairs with the ca_mlm and the dwa
#                  checkpoints (Pharaoh word links)                         -> RUN/align
#   report         scripts/quickstart_report.py: RUN/results.md (table + examples),
#                  RUN/results.json, RUN/learning_curve.png
#
#   bash scripts/quickstart.sh --run-dir runs/quickstart                 # (= make quickstart)
#   bash scripts/quickstart.sh --run-dir runs/qs-gpu --gpu --arch base \
#       --pretrain-updates 50000 --finetune-updates 20000 --max-tokens 8192 --pretrain-max-tokens 24576
#
# Re-running resumes: a finished stage (RUN/stamps/<stage>.done, which holds a hash of its exact
# command) is skipped; an interrupted fairseq-train continues from its checkpoint_last.pt. A
# finished stage re-run with other settings is an error: --force starts RUN afresh.
# The three pipelines (veco, xlm, random) run side by side, at most --jobs stages at a time (2 on
# CPU with >= 2 cores: two 1-thread fairseq processes use 2 cores far better than one 2-thread
# process); every output line is prefixed by its stage.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUN=runs/quickstart
USER_DIR=$ROOT/veco_plugin
PYTHON=python
TEXT_IN=
LOCALE_DIR=/usr/share/locale
SRC=en
TGT=de
VALID_SIZE=500
TEST_SIZE=1000
MAX_TRAIN_PAIRS=0
VOCAB=4000
ARCH=tiny
DECODER_LAYERS=all
MAX_POSITIONS=256
PT_UPDATES=1000
PT_MAX_TOKENS=6144
PT_LR=2e-3
PT_WARMUP=200
FT_UPDATES=600
FT_MAX_TOKENS=4096
FT_LR=2e-3
FT_WARMUP=200
EVAL_INTERVAL=100
AVERAGE_LAST=3
BEAM=5
GEN_MAX_TOKENS=8000
EXAMPLES=5
DWA_UPDATES=300
ALIGN_PAIRS=200
LOG_INTERVAL=50
SEED=1
XLM=1
DEVICE=cpu
FP16=0
JOBS=
THREADS=1
WORKERS=2
FORCE=0
DATA_ONLY=0
SLOTS_OPEN=0

usage() {
  cat <<EOF
usage: $(basename "$0") [flags]
 paths
  --run-dir DIR            everything goes here                          [$RUN]
  --user-dir DIR           fairseq --user-dir                            [$USER_DIR]
  --python PY              Python with sentencepiece/sacrebleu/matplotlib [$PYTHON]
 corpus
  --text DIR               use DIR/{train,valid,test}.{src,tgt} (+ mono.*) instead of gettext
  --locale-dir DIR         gettext catalogs                              [$LOCALE_DIR]
  --src L --tgt L          languages                                     [$SRC $TGT]
  --valid-size N           held-out valid pairs (gettext)                [$VALID_SIZE]
  --test-size N            held-out test pairs (gettext)                 [$TEST_SIZE]
  --max-train-pairs N      keep the first N train pairs and mono lines, 0 = all [$MAX_TRAIN_PAIRS]
  --vocab-size N           joint sentencepiece pieces                    [$VOCAB]
 model
  --arch SIZE              tiny|small|base|large: veco_SIZE, veco_transformer_SIZE [$ARCH]
  --decoder-layers SPEC    veco-init-nmt --decoder-layers (all, last:N, first:N, list) [$DECODER_LAYERS]
  --max-positions N        pre-training (mono; bi gets N/2 a side) and NMT positions [$MAX_POSITIONS]
 pre-training
  --pretrain-updates N     updates of each pre-training                  [$PT_UPDATES]
  --pretrain-max-tokens N  tokens per update (mono + bi sub-batch, TLM included) [$PT_MAX_TOKENS]
  --pretrain-lr LR --pretrain-warmup N                                   [$PT_LR $PT_WARMUP]
  --xlm / --no-xlm         also pre-train with tlm and fine-tune from it (the XLM row) [on]
 fine-tuning (identical for every initialization)
  --finetune-updates N     updates                                       [$FT_UPDATES]
  --max-tokens N           tokens per batch                              [$FT_MAX_TOKENS]
  --finetune-lr LR --finetune-warmup N                                   [$FT_LR $FT_WARMUP]
  --eval-interval K        checkpoint + valid loss + greedy valid BLEU every K updates [$EVAL_INTERVAL]
 evaluation
  --average-last N         average the last N checkpoints                [$AVERAGE_LAST]
  --beam N                 beam size on the test set                     [$BEAM]
  --gen-max-tokens N       fairseq-generate --max-tokens                 [$GEN_MAX_TOKENS]
  --examples N             translated test examples in the report        [$EXAMPLES]
 word alignment (XLM-Align)
  --dwa-updates N          dwa updates from the ca_mlm checkpoint; 0: no alignment stages [$DWA_UPDATES]
  --align-pairs N          test pairs veco-align aligns before and after dwa [$ALIGN_PAIRS]
 machine
  --cpu | --gpu            device                                        [$DEVICE]
  --fp16                   mixed precision (GPU)
  --jobs N                 stages run side by side [2 on CPU with >= 2 cores, else 1]
  --threads N              OMP/MKL threads per job                       [$THREADS]
  --workers N              fairseq-preprocess workers                    [$WORKERS]
  --seed N                 seed of every stage                           [$SEED]
  --log-interval N         fairseq-train --log-interval                  [$LOG_INTERVAL]
 other
  --smoke                  tiny everything, for tests: 2000 train pairs, 40 valid/test, vocab
                           1000, 20 pre-training and 20 fine-tuning updates (later flags win)
  --force                  delete RUN and run every stage again
  --data-only              stop after the corpus and data stages (RUN/data, RUN/nmt-bin;
                           what benchmarks/init_sweep.py builds on)
  -h, --help               this help
EOF
}

die() { echo "$(basename "$0"): error: $*" >&2; exit 1; }

smoke_preset() {
  VALID_SIZE=40; TEST_SIZE=40; MAX_TRAIN_PAIRS=2000; VOCAB=1000
  PT_UPDATES=20; PT_MAX_TOKENS=3072; PT_WARMUP=10; FT_UPDATES=20; FT_MAX_TOKENS=1024
  FT_WARMUP=10; EVAL_INTERVAL=10; AVERAGE_LAST=2; EXAMPLES=2; LOG_INTERVAL=10
  DWA_UPDATES=5; ALIGN_PAIRS=10
}
for arg in "$@"; do [[ "$arg" == --smoke ]] && smoke_preset; done

while [[ $# -gt 0 ]]; do
  case "$1" in
    --run-dir) RUN=$2; shift 2 ;;
    --user-dir) USER_DIR=$2; shift 2 ;;
    --python) PYTHON=$2; shift 2 ;;
    --text) TEXT_IN=$2; shift 2 ;;
    --locale-dir) LOCALE_DIR=$2; shift 2 ;;
    --src) SRC=$2; shift 2 ;;
    --tgt) TGT=$2; shift 2 ;;
    --valid-size) VALID_SIZE=$2; shift 2 ;;
    --test-size) TEST_SIZE=$2; shift 2 ;;
    --max-train-pairs) MAX_TRAIN_PAIRS=$2; shift 2 ;;
    --vocab-size) VOCAB=$2; shift 2 ;;
    --arch) ARCH=$2; shift 2 ;;
    --decoder-layers) DECODER_LAYERS=$2; shift 2 ;;
    --max-positions) MAX_POSITIONS=$2; shift 2 ;;
    --pretrain-updates) PT_UPDATES=$2; shift 2 ;;
    --pretrain-max-tokens) PT_MAX_TOKENS=$2; shift 2 ;;
    --pretrain-lr) PT_LR=$2; shift 2 ;;
    --pretrain-warmup) PT_WARMUP=$2; shift 2 ;;
    --xlm) XLM=1; shift ;;
    --no-xlm) XLM=0; shift ;;
    --finetune-updates) FT_UPDATES=$2; shift 2 ;;
    --max-tokens) FT_MAX_TOKENS=$2; shift 2 ;;
    --finetune-lr) FT_LR=$2; shift 2 ;;
    --finetune-warmup) FT_WARMUP=$2; shift 2 ;;
    --eval-interval) EVAL_INTERVAL=$2; shift 2 ;;
    --average-last) AVERAGE_LAST=$2; shift 2 ;;
    --beam) BEAM=$2; shift 2 ;;
    --gen-max-tokens) GEN_MAX_TOKENS=$2; shift 2 ;;
    --examples) EXAMPLES=$2; shift 2 ;;
    --dwa-updates) DWA_UPDATES=$2; shift 2 ;;
    --align-pairs) ALIGN_PAIRS=$2; shift 2 ;;
    --cpu) DEVICE=cpu; shift ;;
    --gpu) DEVICE=gpu; shift ;;
    --fp16) FP16=1; shift ;;
    --jobs) JOBS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --log-interval) LOG_INTERVAL=$2; shift 2 ;;
    --smoke) shift ;;
    --force) FORCE=1; shift ;;
    --data-only) DATA_ONLY=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown flag $1" ;;
  esac
done

# ------------------------------------------------------------------------------ checks
is_int() { [[ "$2" =~ ^[0-9]+$ ]] || die "$1 must be a non-negative integer, got '$2'"; }
while read -r flag value; do
  is_int "$flag" "$value"
done <<EOF
--valid-size $VALID_SIZE
--test-size $TEST_SIZE
--max-train-pairs $MAX_TRAIN_PAIRS
--vocab-size $VOCAB
--max-positions $MAX_POSITIONS
--pretrain-updates $PT_UPDATES
--pretrain-max-tokens $PT_MAX_TOKENS
--pretrain-warmup $PT_WARMUP
--finetune-updates $FT_UPDATES
--max-tokens $FT_MAX_TOKENS
--finetune-warmup $FT_WARMUP
--eval-interval $EVAL_INTERVAL
--average-last $AVERAGE_LAST
--beam $BEAM
--gen-max-tokens $GEN_MAX_TOKENS
--examples $EXAMPLES
--dwa-updates $DWA_UPDATES
--align-pairs $ALIGN_PAIRS
--threads $THREADS
--workers $WORKERS
--seed $SEED
--log-interval $LOG_INTERVAL
EOF
case "$ARCH" in
  tiny) ENC_LAYERS=2 ;; small) ENC_LAYERS=6 ;; base) ENC_LAYERS=12 ;; large) ENC_LAYERS=24 ;;
  *) die "--arch $ARCH: choose tiny, small, base or large (veco-init-nmt maps only these sizes)" ;;
esac
case "$DECODER_LAYERS" in
  all) DEC_LAYERS=$ENC_LAYERS ;;
  first:*|last:*) DEC_LAYERS=${DECODER_LAYERS#*:} ;;
  *) DEC_LAYERS=$(tr ',' '\n' <<<"$DECODER_LAYERS" | grep -c .) ;;
esac
is_int --decoder-layers "$DEC_LAYERS"
(( PT_UPDATES > 0 && FT_UPDATES > 0 && EVAL_INTERVAL > 0 )) \
  || die "--pretrain-updates, --finetune-updates and --eval-interval must be > 0"
(( FT_UPDATES % EVAL_INTERVAL == 0 )) \
  || die "--finetune-updates ($FT_UPDATES) must be a multiple of --eval-interval ($EVAL_INTERVAL)"
(( AVERAGE_LAST >= 1 && AVERAGE_LAST <= FT_UPDATES / EVAL_INTERVAL )) \
  || die "--average-last must be in 1..$((FT_UPDATES / EVAL_INTERVAL)) (checkpoints saved)"
(( MAX_POSITIONS >= 16 && MAX_POSITIONS % 2 == 0 )) || die "--max-positions must be even and >= 16"
[[ "$SRC" != "$TGT" ]] || die "--src and --tgt must differ"
[[ -d "$USER_DIR" ]] || die "--user-dir $USER_DIR not found"
if [[ -z "$JOBS" ]]; then
  JOBS=1
  [[ "$DEVICE" == cpu && $(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc) -ge 2 ]] && JOBS=2
fi
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || die "--jobs must be a positive integer, got '$JOBS'"
for tool in fairseq-train fairseq-preprocess fairseq-generate veco-gettext-corpus veco-init-nmt \
  veco-average-checkpoints veco-align; do
  command -v "$tool" >/dev/null || die "$tool not on PATH (activate the venv or: make setup)"
done
command -v "$PYTHON" >/dev/null || die "--python $PYTHON not found"

if [[ "$FORCE" == 1 && -e "$RUN" ]]; then
  [[ -d "$RUN/stamps" || -z "$(ls -A "$RUN")" ]] \
    || die "--force: $RUN does not look like a quickstart run directory (no stamps/); not deleting it"
  echo "== --force: deleting $RUN"
  rm -rf "$RUN"
fi
mkdir -p "$RUN/stamps" "$RUN/logs"
RUN=$(cd "$RUN" && pwd)
TEXT=$RUN/text
DATA=$RUN/data
NMT_BIN=$RUN/nmt-bin
export OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS PYTHONUNBUFFERED=1

DEVICE_FLAGS=()
[[ "$DEVICE" == cpu ]] && DEVICE_FLAGS=(--cpu)
[[ "$FP16" == 1 ]] && DEVICE_FLAGS+=(--fp16)
ALIGN_DEVICE=()
[[ "$DEVICE" == cpu ]] && ALIGN_DEVICE=(--cpu)
INITS=(veco)
[[ "$XLM" == 1 ]] && INITS+=(xlm)
INITS+=(random)

# -------------------------------------------------------------------------- stage runner
# Lines of fairseq/hydra start-up noise kept out of the console (they stay in RUN/logs).
NOISE='deprecation_warning|UserWarning|FutureWarning|warnings\.warn|version_base|compatability version|Will assume defaults|ConfigStore schema|This behavior is deprecated|hydra\.cc|strict flag|real_initialize|exec\(cmd, globals|torch\.cuda\.amp|^DEBUG:hydra|fairseq_cli\.(train|generate) \| \{|fairseq_cli\.generate:\{|^ +(sys\.exit\(cli_main\(\)\)|super\(\)\.__init__\(loader\))$|^\s*$'

stamp_of() { echo "$RUN/stamps/$1.done"; }
x() { echo "\$ $*"; "$@"; }  # a command of a multi-command stage, shown in its log

# run_stage NAME CMD ARGS...: skip when stamped with the same command, else run it with its
# output in RUN/logs/NAME.log and on the console (prefixed), then stamp it.
run_stage() {
  local name=$1; shift
  local config stamp start
  config=$(printf '%q ' "$@" | sha1sum | cut -c1-16)
  stamp=$(stamp_of "$name")
  if [[ -f "$stamp" ]]; then
    if grep -qx "config=$config" "$stamp"; then
      echo "== [$name] finished earlier: skipped ($stamp)"
      return 0
    fi
    die "stage $name finished earlier with other settings ($stamp): --force to start afresh, or another --run-dir"
  fi
  if [[ "$SLOTS_OPEN" == 1 ]]; then read -r -u 9; fi  # wait for a free slot (see SLOTS below)
  echo "== [$name] $(date '+%H:%M:%S') start (log: $RUN/logs/$name.log)"
  start=$SECONDS
  set +e  # the stage runs with its own errexit; the slot is given back whatever happens
  { echo "\$ $*"; ( set -e; "$@" ) 2>&1; } | tee -a "$RUN/logs/$name.log" \
    | sed -u -E "\#$NOISE#d; s#^#[$name] #"
  local status=("${PIPESTATUS[@]}")
  set -e
  if [[ "$SLOTS_OPEN" == 1 ]]; then echo >&9; fi
  [[ "${status[*]}" == "0 0 0" ]] \
    || die "stage $name failed (exit ${status[0]}; log: $RUN/logs/$name.log)"
  printf 'config=%s\nseconds=%d\nfinished=%s\n' "$config" $((SECONDS - start)) "$(date -Iseconds)" \
    > "$stamp.part"
  mv "$stamp.part" "$stamp"
  echo "== [$name] $(date '+%H:%M:%S') done in $((SECONDS - start)) s"
}

# ---------------------------------------------------------------------------------- stages
make_text() {  # corpus: gettext (or --text) -> TEXT/{train,valid,test,mono}.{src,tgt}
  local source=$RUN/corpus
  if [[ -n "$TEXT_IN" ]]; then
    source=$TEXT_IN
  else
    x veco-gettext-corpus --tgt-lang "$TGT" --output "$source" --locale-dir "$LOCALE_DIR" \
      --valid-size "$VALID_SIZE" --test-size "$TEST_SIZE" --seed "$SEED"
  fi
  mkdir -p "$TEXT"
  local split lang
  for split in train valid test mono; do
    for lang in "$SRC" "$TGT"; do
      local f=$source/$split.$lang
      if [[ ! -s "$f" ]]; then
        [[ "$split" == mono ]] && continue
        echo "missing or empty: $f" >&2
        return 1
      fi
      if [[ "$MAX_TRAIN_PAIRS" -gt 0 && ( "$split" == train || "$split" == mono ) ]]; then
        head -n "$MAX_TRAIN_PAIRS" "$f" > "$TEXT/$split.$lang"
      else
        cp "$f" "$TEXT/$split.$lang"
      fi
    done
  done
  [[ -f "$source/catalogs.json" ]] && cp "$source/catalogs.json" "$TEXT/"
  wc -l "$TEXT"/*."$SRC" "$TEXT"/*."$TGT"
}

make_data() {  # data: sentencepiece + veco_pretraining DATA + translation NMT_BIN (with test)
  PYTHON=$PYTHON x bash "$ROOT/scripts/prepare-pretraining-data.sh" --text "$TEXT" --out "$DATA" \
    --src "$SRC" --tgt "$TGT" --vocab-size "$VOCAB" --workers "$WORKERS"
  echo "== encoding the test set with $DATA/spm.model"
  # Every valid/test sentence (+ <s> and </s>: translation_from_pretrained_veco's source is
  # <s> x </s>) must fit the positions: fairseq-generate refuses longer.
  "$PYTHON" - "$DATA/spm.model" "$MAX_POSITIONS" "$TEXT/test.$SRC" "$DATA/text/test.spm.$SRC" \
    "$TEXT/test.$TGT" "$DATA/text/test.spm.$TGT" <<'PYEOF'
import glob, os, sys, sentencepiece as spm
sp, max_positions = spm.SentencePieceProcessor(model_file=sys.argv[1]), int(sys.argv[2])
for src, dst in zip(sys.argv[3::2], sys.argv[4::2]):
    with open(src, encoding="utf-8") as f, open(dst, "w", encoding="utf-8") as o:
        for line in f:
            o.write(" ".join(sp.encode(line.strip(), out_type=str)) + "\n")
text = os.path.dirname(sys.argv[4])
for path in glob.glob(f"{text}/valid.spm.*") + glob.glob(f"{text}/test.spm.*"):
    with open(path, encoding="utf-8") as f:
        longest = max(len(line.split()) for line in f)
    if longest + 2 > max_positions:
        sys.exit(f"{path}: a sentence of {longest} pieces (+ <s>, </s>) exceeds --max-positions "
                 f"{max_positions}; raise --max-positions (or --vocab-size)")
PYEOF
  echo "== binarizing the translation data (--joined-dictionary --srcdict $DATA/dict.txt)"
  rm -rf "$NMT_BIN"
  x fairseq-preprocess -s "$SRC" -t "$TGT" --joined-dictionary --srcdict "$DATA/dict.txt" \
    --trainpref "$DATA/text/train.spm" --validpref "$DATA/text/valid.spm" \
    --testpref "$DATA/text/test.spm" --destdir "$NMT_BIN" --workers "$WORKERS"
  local split lang
  for split in valid test; do
    for lang in "$SRC" "$TGT"; do cp "$TEXT/$split.$lang" "$NMT_BIN/$split.raw.$lang"; done
  done
}

pretrain() {  # pretrain-<init>: CRITERION UPDATES [EXTRA FLAGS...]
  local init=$1 criterion=$2 updates=$3
  shift 3
  run_stage "pretrain-$init" fairseq-train "$DATA" --user-dir "$USER_DIR" \
    --task veco_pretraining --mono-langs "$SRC,$TGT" --bi-pairs "$SRC-$TGT" \
    --arch "veco_$ARCH" --criterion "$criterion" "${DEVICE_FLAGS[@]}" \
    --optimizer adam --adam-betas '(0.9,0.98)' --adam-eps 1e-6 --clip-norm 1.0 \
    --lr "$PT_LR" --lr-scheduler inverse_sqrt --warmup-updates "$PT_WARMUP" \
    --max-tokens "$PT_MAX_TOKENS" --max-mono-positions "$MAX_POSITIONS" \
    --max-bi-positions $((MAX_POSITIONS / 2)) --max-update "$updates" \
    --save-dir "$RUN/pretrain/$init" --no-epoch-checkpoints \
    --save-interval-updates "$((updates < 500 ? updates : 500))" --keep-interval-updates 1 \
    --validate-interval-updates "$updates" --validate-interval 1000000 \
    --log-format json --log-interval "$LOG_INTERVAL" --seed "$SEED" --num-workers 0 "$@"
}

align_words() {  # align: the first ALIGN_PAIRS test pairs, word-aligned before and after dwa
  local out=$RUN/align model
  mkdir -p "$out"
  head -n "$ALIGN_PAIRS" "$TEXT/test.$SRC" > "$out/test.$SRC"
  head -n "$ALIGN_PAIRS" "$TEXT/test.$TGT" > "$out/test.$TGT"
  for model in veco dwa; do
    x veco-align --path "$RUN/pretrain/$model/checkpoint_last.pt" --spm-model "$DATA/spm.model" \
      --dict "$DATA/dict.txt" --src "$out/test.$SRC" --tgt "$out/test.$TGT" --no-progress \
      --output "$out/$model.align" "${ALIGN_DEVICE[@]}"
  done
}

init_nmt() {  # init-<init>: the pre-trained encoder -> veco_transformer checkpoint
  local init=$1
  run_stage "init-$init" veco-init-nmt --pretrained "$RUN/pretrain/$init/checkpoint_last.pt" \
    --output "$RUN/init/$init.pt" --arch "veco_transformer_$ARCH" \
    --decoder-layers "$DECODER_LAYERS" --dict "$DATA/dict.txt" --seed "$SEED"
}

finetune() {  # finetune-<init>: identical flags for every init, plus --finetune-from-model
  local init=$1 from=()
  [[ "$init" != random ]] && from=(--finetune-from-model "$RUN/init/$init.pt")
  run_stage "finetune-$init" fairseq-train "$NMT_BIN" --user-dir "$USER_DIR" \
    --task translation_from_pretrained_veco -s "$SRC" -t "$TGT" \
    --arch "veco_transformer_$ARCH" --decoder-layers "$DEC_LAYERS" \
    --max-source-positions "$MAX_POSITIONS" --max-target-positions "$MAX_POSITIONS" \
    "${from[@]}" "${DEVICE_FLAGS[@]}" \
    --criterion label_smoothed_cross_entropy --label-smoothing 0.1 \
    --optimizer adam --adam-betas '(0.9,0.98)' --adam-eps 1e-6 --clip-norm 1.0 \
    --lr "$FT_LR" --lr-scheduler inverse_sqrt --warmup-updates "$FT_WARMUP" \
    --max-tokens "$FT_MAX_TOKENS" --max-update "$FT_UPDATES" \
    --save-dir "$RUN/finetune/$init" --no-epoch-checkpoints \
    --save-interval-updates "$EVAL_INTERVAL" --keep-interval-updates "$AVERAGE_LAST" \
    --validate-interval-updates "$EVAL_INTERVAL" --validate-interval 1000000 \
    --eval-bleu --eval-bleu-remove-bpe sentencepiece \
    --eval-bleu-args '{"beam": 1, "max_len_a": 1.2, "max_len_b": 10}' \
    --log-format json --log-interval "$LOG_INTERVAL" --seed "$SEED" --num-workers 0
}

evaluate() {  # eval-<init>: average -> beam search over every test sentence -> BLEU
  local init=$1 cpu=()
  [[ "$DEVICE" == cpu ]] && cpu=(--cpu)
  run_stage "eval-$init" bash "$ROOT/scripts/evaluate-wmt14.sh" \
    --checkpoint-dir "$RUN/finetune/$init" --num-update-checkpoints "$AVERAGE_LAST" \
    --data-bin "$NMT_BIN" --spm-model "$DATA/spm.model" --src "$SRC" --tgt "$TGT" \
    --gen-subset test --beam "$BEAM" --max-tokens "$GEN_MAX_TOKENS" --user-dir "$USER_DIR" \
    --task translation_from_pretrained_veco --out-dir "$RUN/eval/$init" --python "$PYTHON" -- \
    --max-len-a 1.2 --max-len-b 10 "${cpu[@]}"
}

pipeline_veco() {
  pretrain veco ca_mlm "$PT_UPDATES"; init_nmt veco; finetune veco; evaluate veco
  if (( DWA_UPDATES > 0 )); then
    pretrain dwa dwa "$DWA_UPDATES" --restore-file "$RUN/pretrain/veco/checkpoint_last.pt" \
      --reset-optimizer --reset-dataloader --reset-meters --reset-lr-scheduler
    run_stage align align_words
  fi
}
pipeline_xlm() { pretrain xlm tlm "$PT_UPDATES"; init_nmt xlm; finetune xlm; evaluate xlm; }
pipeline_random() { finetune random; evaluate random; }

# ------------------------------------------------------------------------------------ run
echo "== quickstart: run dir $RUN; arch veco_$ARCH/veco_transformer_$ARCH; inits ${INITS[*]};"
echo "   pre-training $PT_UPDATES updates, fine-tuning $FT_UPDATES updates; $DEVICE, $JOBS job(s) x $THREADS thread(s)"
run_stage corpus make_text "$TEXT_IN" "$LOCALE_DIR" "$SRC" "$TGT" "$VALID_SIZE" "$TEST_SIZE" \
  "$MAX_TRAIN_PAIRS" "$SEED"
run_stage data make_data "$VOCAB" "$WORKERS" "$MAX_POSITIONS"
if [[ "$DATA_ONLY" == 1 ]]; then
  echo "== --data-only: $DATA (pre-training) and $NMT_BIN (translation) are ready"
  exit 0
fi

if [[ "$JOBS" -gt 1 ]]; then
  # SLOTS: the pipelines run side by side; a stage takes one of JOBS tokens from fd 9.
  slots=$RUN/.slots.$$
  mkfifo "$slots"
  exec 9<>"$slots"
  rm -f "$slots"
  for ((i = 0; i < JOBS; i++)); do echo >&9; done
  SLOTS_OPEN=1
  pids=()
  # Background jobs of a script ignore SIGINT: on Ctrl-C/TERM stop their process trees here
  # (all of a tree at once, so that no pipeline starts its next stage in between).
  tree() {
    local child
    echo "$1"
    for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do tree "$child"; done
  }
  stop_pipelines() {
    trap - INT TERM
    echo "== interrupted: stopping the running stages (re-run to resume)" >&2
    local all=() pid
    for pid in "${pids[@]}"; do mapfile -t -O "${#all[@]}" all < <(tree "$pid"); done
    kill "${all[@]}" 2>/dev/null || true
    exit 130
  }
  trap stop_pipelines INT TERM
  for init in "${INITS[@]}"; do
    "pipeline_$init" & pids+=($!)
    sleep 1  # the pre-training pipelines (longest) take the first slots
  done
  failed=0
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  trap - INT TERM
  exec 9>&-
  SLOTS_OPEN=0
  [[ $failed == 0 ]] || die "a pipeline failed (see the [stage] lines above and $RUN/logs)"
else
  for init in "${INITS[@]}"; do "pipeline_$init"; done
fi

report_stamp=$(stamp_of report)
if [[ -f "$report_stamp" && -n "$(find "$RUN/stamps" -name '*.done' -newer "$report_stamp")" ]]; then
  rm -f "$report_stamp"  # a stage ran again since the last report
fi
run_stage report "$PYTHON" "$ROOT/scripts/quickstart_report.py" --run-dir "$RUN" \
  --inits "$(IFS=,; echo "${INITS[*]}")" --src "$SRC" --tgt "$TGT" --arch "$ARCH" \
  --pretrain-updates "$PT_UPDATES" --finetune-updates "$FT_UPDATES" \
  --eval-interval "$EVAL_INTERVAL" --average-last "$AVERAGE_LAST" --beam "$BEAM" \
  --examples "$EXAMPLES" --align-dir "$RUN/align"
cat "$RUN/results.md"
echo "== quickstart finished in $((SECONDS / 60)) min $((SECONDS % 60)) s (this invocation): $RUN/results.md, $RUN/results.json, $RUN/learning_curve.png"
