#!/usr/bin/env bash
# Corpus curation end to end: a planted raw corpus (generated data) -> `megazoo curate` (filters,
# quality classifier, exact and fuzzy dedup, decontamination against LAMBADA/RACE-format files,
# blend) -> `megazoo train` on the blend.
#
#   bash recipes/curate.sh [OUT_DIR] [--set k=v ...]      (extra --set words go to `megazoo curate`)
#
# DATA: a folder of raw shards (one subfolder per source) in $RAW with a reference set in $REFERENCE
# and evaluation files in $TASKS (space-separated: JSONL files, RACE folders, suite YAMLs); without
# them a planted corpus is generated from the embedded corpus (`megazoo curate generate`).
# DASK: DASK_WORKERS=2 runs the stages on a local Dask cluster, SCHEDULER=tcp://HOST:8786 on yours.
# The blend stage tokenises each source with the code `megazoo preprocess` runs (.bin/.idx per
# source) and writes the `data.path` blend (OUT/curate/06-blend/data_path.txt) that the trainer
# reads; the training here is a few CPU steps of gpt-tiny with the GPT-2 tokenizer.
# Rerun into the same OUT: every step resumes (finished shards kept); other curate settings are refused (docs/curate.md).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/find-python.sh"   # megazoo, python: the project's interpreter
OUT=${1:-runs/curate-demo}
shift || true
mkdir -p "$OUT"
if [ -z "${RAW:-}" ]; then
  [ -d "$OUT/planted" ] || megazoo curate generate "$OUT/planted" --clean 200
  RAW=$OUT/planted/raw
  REFERENCE=$OUT/planted/reference
  TASKS="$OUT/planted/eval/lambada.jsonl RACE=$OUT/planted/eval/RACE"
fi
SCALE=()
[ -n "${DASK_WORKERS:-}" ] && SCALE=(--dask-workers "$DASK_WORKERS")
[ -n "${SCHEDULER:-}" ] && SCALE=(--scheduler "$SCHEDULER")
TASK_LIST=$(printf '%s, ' $TASKS)

megazoo curate curate "${SCALE[@]}" --set input="$RAW" output="$OUT/curate" \
  stages.quality.reference="$REFERENCE" "stages.decontaminate.tasks=[${TASK_LIST%, }]" "$@"
DATA_PATH=$(cat "$OUT/curate/06-blend/data_path.txt")
echo "data.path: $DATA_PATH"

megazoo train gpt-tiny --set data.path="$DATA_PATH" data.synthetic=false data.tokenizer=gpt2 \
  model.vocab_size=50257 data.split=90,10,0 train.steps=${STEPS:-20} train.eval_interval=10 \
  log.dir="$OUT/train" checkpoint.dir="$OUT/train/checkpoints"
