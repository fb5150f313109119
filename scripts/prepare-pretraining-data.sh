#!/usr/bin/env bash
# Stage: raw parallel + monolingual text -> joint sentencepiece model -> DATA/ for veco_pretraining.
#
#   TEXT/train.{src,tgt} valid.{src,tgt}   line-aligned translation pairs
#   TEXT/mono.{src,tgt}                    optional monolingual text (default: the train sides)
# writes
#   DATA/spm.model DATA/dict.txt DATA/mono/<lang>/ DATA/bi/<src>-<tgt>/  (+ DATA/text/*.spm.* encoded text)
# Text that is not UTF-8 (file and line named), sides with different line counts and a
# --vocab-size the text cannot support (the largest that works named) stop it before any work.
set -euo pipefail
TEXT=""; DATA=""; SRC=en; TGT=de; VOCAB=4000; SPM_MODEL=""; WORKERS=2; PY=${PYTHON:-python}
die() { echo "$(basename "$0"): error: $*" >&2; exit 1; }
usage() { echo "usage: $0 --text DIR --out DATA [--src en] [--tgt de] [--vocab-size 4000] [--spm-model M] [--workers 2]"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --text) TEXT=$2; shift 2 ;;
    --out) DATA=$2; shift 2 ;;
    --src) SRC=$2; shift 2 ;;
    --tgt) TGT=$2; shift 2 ;;
    --vocab-size) VOCAB=$2; shift 2 ;;
    --spm-model) SPM_MODEL=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "prepare-pretraining-data.sh: unknown flag $1" >&2; usage >&2; exit 2 ;;
  esac
done
[[ -n "$TEXT" && -n "$DATA" ]] || { usage >&2; exit 2; }
for f in train.$SRC train.$TGT valid.$SRC valid.$TGT; do
  [[ -s "$TEXT/$f" ]] || die "$TEXT/$f is missing or empty (--text)"
done
mono() { if [[ -s "$TEXT/mono.$1" ]]; then echo "$TEXT/mono.$1"; else echo "$TEXT/train.$1"; fi; }

echo "== checking text"
"$PY" - "$TEXT/train.$SRC" "$TEXT/train.$TGT" "$TEXT/valid.$SRC" "$TEXT/valid.$TGT" \
  "$(mono "$SRC")" "$(mono "$TGT")" <<'PYEOF'
import sys
def count_lines(path):  # lines split on \n only, as the encoder below reads them
    n = 0
    with open(path, "rb") as f:
        for n, raw in enumerate(f, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as e:
                sys.exit(f"prepare-pretraining-data.sh: error: {path} line {n}: not valid UTF-8 "
                         f"(byte 0x{raw[e.start:e.start + 1].hex()} at column {e.start + 1}); "
                         "fix or remove that line (and its translation)")
    return n
lines = {path: count_lines(path) for path in sys.argv[1:]}
for a, b in (sys.argv[1:3], sys.argv[3:5]):
    if lines[a] != lines[b]:
        sys.exit(f"prepare-pretraining-data.sh: error: {a} has {lines[a]} lines but {b} has "
                 f"{lines[b]}: the sides of a parallel corpus must match line by line")
PYEOF
mkdir -p "$DATA/text"

if [[ -z "$SPM_MODEL" ]]; then
  SPM_MODEL=$DATA/spm.model
  if [[ ! -s "$SPM_MODEL" ]]; then
    echo "== training a joint sentencepiece model ($VOCAB pieces)"
    "$PY" - "$DATA/spm" "$VOCAB" "$(mono "$SRC")" "$(mono "$TGT")" "$TEXT/train.$SRC" "$TEXT/train.$TGT" <<'PYEOF'
import re, sys, sentencepiece as spm
prefix, vocab, files = sys.argv[1], int(sys.argv[2]), sorted(set(sys.argv[3:]))
try:
    spm.SentencePieceTrainer.train(input=",".join(files), model_prefix=prefix, vocab_size=vocab,
        character_coverage=1.0, model_type="unigram", bos_id=-1, eos_id=-1, pad_id=-1, unk_id=0,
        input_sentence_size=2000000, shuffle_input_sentence=True, minloglevel=2, num_threads=2)
except RuntimeError as e:  # sentencepiece states the bound: "... <= M." / "N vs M."
    most = re.search(r"Vocabulary size too high.*<= *(\d+)", str(e))
    least = re.search(r"smaller than required_chars\. *\d+ vs (\d+)", str(e))
    if most:
        sys.exit(f"prepare-pretraining-data.sh: error: --vocab-size {vocab}: the text supports "
                 f"at most {most.group(1)} pieces; pass --vocab-size {most.group(1)} or less, "
                 "or more text")
    if least:
        sys.exit(f"prepare-pretraining-data.sh: error: --vocab-size {vocab}: the text has "
                 f"characters for {least.group(1)} pieces, each needs one; pass --vocab-size "
                 f"{least.group(1)} or more")
    raise
PYEOF
  fi
fi
[[ -s "$SPM_MODEL" ]] || die "--spm-model $SPM_MODEL not found"

echo "== encoding text with $SPM_MODEL"
"$PY" - "$SPM_MODEL" "$DATA" "$DATA/text" "$TEXT/train.$SRC" "$TEXT/train.$TGT" "$TEXT/valid.$SRC" \
  "$TEXT/valid.$TGT" "$(mono "$SRC")" "$(mono "$TGT")" <<'PYEOF'
import os, sys, sentencepiece as spm
model, data, out, files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
sp = spm.SentencePieceProcessor(model_file=model)
names = ["train.src", "train.tgt", "valid.src", "valid.tgt", "mono.src", "mono.tgt"]
for name, path in zip(names, files):
    lang = path.rsplit(".", 1)[1]
    # lines split on \n only; a \r or other line separator inside a line becomes a space
    with open(path, encoding="utf-8", newline="\n") as f, open(os.path.join(out, f"{name.split('.')[0]}.spm.{lang}"), "w", encoding="utf-8") as o:
        for line in f:
            o.write(" ".join(sp.encode(" ".join(line.split()), out_type=str)) + "\n")
if not os.path.exists(os.path.join(data, "dict.txt")):
    with open(os.path.join(data, "dict.txt"), "w", encoding="utf-8") as o:
        for i in range(sp.get_piece_size()):
            if not (sp.is_unknown(i) or sp.is_control(i)):
                o.write(f"{sp.id_to_piece(i)} 1\n")
PYEOF

echo "== binarizing"
for lang in "$SRC" "$TGT"; do
  rm -rf "$DATA/mono/$lang"
  fairseq-preprocess --only-source --srcdict "$DATA/dict.txt" --workers "$WORKERS" \
    --trainpref "$DATA/text/mono.spm.$lang" --validpref "$DATA/text/valid.spm.$lang" \
    --destdir "$DATA/mono/$lang" > /dev/null
done
rm -rf "$DATA/bi/$SRC-$TGT"
fairseq-preprocess --source-lang "$SRC" --target-lang "$TGT" --srcdict "$DATA/dict.txt" \
  --tgtdict "$DATA/dict.txt" --workers "$WORKERS" --trainpref "$DATA/text/train.spm" \
  --validpref "$DATA/text/valid.spm" --destdir "$DATA/bi/$SRC-$TGT" > /dev/null
echo "== DATA ready: $DATA (dict $(wc -l < "$DATA/dict.txt") types)"
