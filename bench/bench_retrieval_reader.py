"""Reader benchmark on generated data: the span reader trained on fixed retrieval vs the reader and
query encoder trained end to end ("individual top-k"), exact match of the final answers on the
generated nq-test.json. Needs bench/bench_retrieval.py's runs (the data, the imported MiniLM and
the ICT + supervised retriever in runs/bench-retrieval/finetune/checkpoints).

    python bench/bench_retrieval_reader.py [reader|mss|table|seeds] [--stage reader|e2e|both] [--out-dir runs/bench-retrieval]
        [--steps 100] [--threads 2] [--seed N] [--questions test|devtest] [--retriever-lr-scale 1.0]

--questions devtest evaluates on the generated nq-dev.json and nq-test.json together (written to
data/nq-devtest.json); --retriever-lr-scale sets the e2e query tower's rate as a multiple of --lr
(task.retriever_lr_scale).

Both runs go through the core trainer (tasks/retrieval/reader/builder.py) and start from the same reader (MiniLM)
and retriever, with the same steps, questions, learning rate and seed; the only difference is
whether the reader's passage posterior trains the query tower (with the training questions
re-retrieved every --refresh steps). Writes OUT/reader2-{reader,e2e}/ and bench/retrieval_reader.md
(the bench/RESULTS.md section); `--stage reader` / `--stage e2e` run one stage (e.g. both at once
in two processes), `table` then writes the section from their reader.json files.

mss: masked salient span pretraining from the ICT checkpoint (runs/bench-retrieval/ict), then DPR
top-k of its query tower on nq-test.json against ICT alone (test-ict.json of bench_retrieval.py
finetune, the same 32 / 128 token lengths); writes OUT/mss/ and bench/retrieval_mss.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("part", nargs="?", default="reader", choices=("reader", "mss", "table", "seeds"),
                    help="table: the reader section from finished OUT/reader-{reader,e2e}/reader.json runs (each "
                         "stage run on its own, e.g. in parallel; --cpu gives their CPU seconds); seeds: one "
                         "table over finished --stage both runs of --seeds")
    ap.add_argument("--seeds", default="1234,2", help="seeds: the finished runs' seeds, one table over them")
    ap.add_argument("--cpu", default="", help="table: CPU seconds of the reader and e2e runs, e.g. 600,700")
    ap.add_argument("--wall", default="", help="table: wall seconds of the reader and e2e runs (default: their "
                                               "training + evaluation time from reader.json)")
    ap.add_argument("--out-dir", default="runs/bench-retrieval")
    ap.add_argument("--stage", default="both", choices=("reader", "e2e", "both"))
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--reader-length", type=int, default=128)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--top-k", type=int, default=4)
    ap.add_argument("--refresh", type=int, default=10)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1234, help="train.seed (the reader's head, the question order, dropout)")
    ap.add_argument("--retriever-lr-scale", type=float, default=1.0,
                    help="e2e: task.retriever_lr_scale (the query tower's rate as a multiple of --lr)")
    ap.add_argument("--questions", default="test", choices=("test", "devtest"),
                    help="the evaluation questions: nq-test.json, or nq-dev.json and nq-test.json together")
    args = ap.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    out = Path(args.out_dir)
    retriever = out / "finetune" / "checkpoints"
    if not retriever.is_dir():
        raise SystemExit(f"{retriever}: run bench/bench_retrieval.py ict and finetune first")
    if args.part == "mss":
        return part_mss(args, out)
    if args.part == "seeds":
        return print(seeds_section(args, out))
    if args.questions == "devtest":
        write_devtest(out / "data")
    t0, c0 = time.perf_counter(), cpu_s()
    records = {}
    if args.part == "table":
        cpus = [float(x) for x in args.cpu.split(",")] if args.cpu else [float("nan")] * 2
        walls = [float(x) for x in args.wall.split(",")] if args.wall else [None] * 2
        for stage, c, w in zip(("reader", "e2e"), cpus, walls):
            r = json.loads((out / run_name(stage, args) / "reader.json").read_text())
            r["wall_s"], r["cpu_s"] = w if w is not None else r["train_s"] + r["eval_s"], c
            records[stage] = r
        return write_reader_section(args, out, records, sum(r["wall_s"] for r in records.values()), sum(cpus))
    for stage in ("reader", "e2e") if args.stage == "both" else (args.stage,):
        t1, c1 = time.perf_counter(), cpu_s()
        r = run_stage(stage, args, retriever, out, out / run_name(stage, args))
        r["wall_s"], r["cpu_s"] = time.perf_counter() - t1, cpu_s() - c1
        records[stage] = r
        print(stage, ", ".join(f"{k} {100 * v:.1f}%" for k, v in r["metrics"].items()),
              f"{r['wall_s']:.0f} s wall, {r['cpu_s']:.0f} s CPU", flush=True)
    if args.stage != "both":
        return
    write_reader_section(args, out, records, time.perf_counter() - t0, cpu_s() - c0)


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact binomial p-value of `wins` against `losses` (the questions only one run gets right)."""
    from math import comb

    n, k = wins + losses, min(wins, losses)
    return min(1.0, 2 * sum(comb(n, i) for i in range(k + 1)) / 2 ** n) if n else 1.0


def seeds_section(args, out: Path) -> str:
    """One table over finished --stage both runs of several seeds (the same other settings): EM,
    answer recall and retrieval top-k per stage and seed, and per question how many only the e2e
    reader or only the fixed-retrieval reader answers, with a sign test over all seeds."""
    k, rows, wins, losses, ems = args.top_k, [], 0, 0, {"reader": [], "e2e": []}
    for seed in (int(x) for x in args.seeds.split(",")):
        args.seed = seed
        preds = {}
        for stage in ("reader", "e2e"):
            run = out / run_name(stage, args)
            r = json.loads((run / "reader.json").read_text())
            preds[stage] = [json.loads(line)["em"] for line in (run / r["predictions"]).read_text().splitlines()]
            m = points(r["metrics"])
            ems[stage].append(m["em"])
            rows.append(f"| {seed} | {'fixed retrieval' if stage == 'reader' else 'end-to-end'} | {m['em']:.1f} | "
                        f"{m[f'top{k}_recall']:.1f} | {m['retrieval_top1']:.1f} | {m['retrieval_top5']:.1f} | "
                        f"{m['retrieval_top20']:.1f} | {r['train_s'] + r['eval_s']:.0f} |")
        w = sum(e and not f for f, e in zip(preds["reader"], preds["e2e"]))
        lost = sum(f and not e for f, e in zip(preds["reader"], preds["e2e"]))
        rows[-1] += f" {w} / {lost} |"
        rows[-2] += " |"
        wins, losses = wins + w, losses + lost
    n = r["n"]
    return "\n".join([
        f"| seed | reader | EM | top-{k} answer recall | retrieval top-1 | top-5 | top-20 | train + eval (s) | "
        f"questions only e2e / only fixed gets right |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows, "",
        f"{n} questions per run ({'nq-dev and nq-test' if args.questions == 'devtest' else 'nq-test'}); e2e query "
        f"tower at {args.retriever_lr_scale:g} x lr {args.lr:g}. Mean EM: fixed retrieval {mean(ems['reader']):.1f}, "
        f"end-to-end {mean(ems['e2e']):.1f} ({mean(ems['e2e']) - mean(ems['reader']):+.1f}). Over all seeds "
        f"{wins} answers are right only end to end and {losses} only on fixed retrieval (two-sided sign test p = "
        f"{sign_test(wins, losses):.3f}; the seeds share the questions, so the runs are not independent)."])


def write_devtest(data: Path) -> Path:
    """data/nq-devtest.json: the generated nq-dev.json and nq-test.json questions in one file."""
    path = data / "nq-devtest.json"
    both = [*json.loads((data / "nq-dev.json").read_text()), *json.loads((data / "nq-test.json").read_text())]
    path.write_text(json.dumps(both, indent=1))
    return path


def stage_settings(stage: str, args) -> list[str]:
    """The --set overrides --questions and --retriever-lr-scale add."""
    extra = ["task.test_file=nq-devtest.json"] if args.questions == "devtest" else []
    if stage != "reader" and args.retriever_lr_scale != 1.0:
        extra.append(f"task.retriever_lr_scale={args.retriever_lr_scale:g}")
    return extra


def run_stage(stage: str, args, retriever, out: Path, log_dir: Path, extra=()) -> dict:
    """One stage on the core trainer (reader/train.py train_reader), no checkpoints (the bench keeps metrics)."""
    from megazoo.tasks.retrieval.reader.train import train_reader
    from megazoo.tasks.retrieval.stages import load_recipe

    cfg = load_recipe(f"retrieval-{stage}", [
        f"task.retriever={retriever}", f"train.init_from={out / 'minilm'}", f"data.path={out / 'data'}",
        f"task.top_k={args.top_k}", f"task.refresh_steps={args.refresh}", f"train.steps={args.steps}",
        f"train.micro_batch={args.batch}", f"train.global_batch={args.batch}", f"train.lr={args.lr}",
        f"task.reader_length={args.reader_length}", "task.question_length=32", "checkpoint.save=false",
        f"train.seed={args.seed}",
        "log.progress=false", "log.plot=false", f"log.dir={log_dir}", *stage_settings(stage, args), *extra])
    return train_reader(cfg)


def run_name(stage: str, args) -> str:
    name = f"reader2-{stage}" + ("" if args.seed == 1234 else f"-seed{args.seed}")
    name += "" if args.questions == "test" else f"-{args.questions}"
    return name + ("" if stage == "reader" or args.retriever_lr_scale == 1.0 else f"-q{args.retriever_lr_scale:g}")


def mean(xs) -> float:
    return sum(xs) / max(1, len(xs))


def points(metrics: dict) -> dict:
    """The record's metrics (fractions, as eval/metrics gives them) in percentage points, for printing."""
    return {k: 100 * v for k, v in metrics.items()}


def write_reader_section(args, out: Path, records: dict, wall: float, cpu: float) -> None:
    k = args.top_k
    fixed, e2e = records["reader"], records["e2e"]
    pts = {name: points(r["metrics"]) for name, r in records.items()}
    lines = [
        "### Reader: fixed retrieval vs end-to-end (individual top-k)",
        "",
        f"Generated data (`megazoo task retrieval data`, the embedded corpus), not NQ. CPU, torch {args.threads} "
        f"threads, on a machine shared with other jobs (load average {os.getloadavg()[0]:.1f} at the end); wall "
        f"{wall:.0f} s, CPU {cpu:.0f} s.",
        "",
        f"Both on the core trainer (reader/builder.py). Reader: all-MiniLM-L6-v2 with a span head, {args.steps} steps "
        f"of {args.batch} training questions, each read over its top-{k} passages (marginal likelihood over passages "
        f"and answer occurrences), lr {args.lr:g} (warmup 10%, cosine). Retriever: the ICT + supervised checkpoint "
        f"above. End to end: the query tower trained too (lr {args.lr * args.retriever_lr_scale:g}), training "
        f"questions re-retrieved every {args.refresh} steps "
        f"({e2e['refreshes']} refreshes); context tower and index fixed. Exact match on the {fixed['n']} generated "
        f"{'nq-test' if args.questions == 'test' else 'nq-dev and nq-test'} questions; train.seed {args.seed}.",
        "",
        f"| reader | EM | top-{k} answer recall | retrieval top-1 | top-5 | top-20 | train loss (first -> last 10 "
        f"steps) | test loss | wall (s) | CPU (s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *[f"| {name} | {m['em']:.1f} | {m[f'top{k}_recall']:.1f} | "
          f"{m['retrieval_top1']:.1f} | {m['retrieval_top5']:.1f} | "
          f"{m['retrieval_top20']:.1f} | {mean(r['losses'][:10]):.2f} -> {mean(r['losses'][-10:]):.2f} | "
          f"{r['valid_loss']:.2f} | {r['wall_s']:.0f} | {r['cpu_s']:.0f} |"
          for name, r, m in (("fixed retrieval", fixed, pts["reader"]), ("end-to-end", e2e, pts["e2e"]))],
        "",
        f"End-to-end training changes EM by {pts['e2e']['em'] - pts['reader']['em']:+.1f} points over the reader "
        f"on fixed retrieval (one seed; {fixed['n']} questions, so one question is {100 / fixed['n']:.1f} points).",
        ""]
    (ROOT / "retrieval_reader.md").write_text("\n".join(lines))
    (out / f"{run_name('e2e', args)}.json").write_text(json.dumps({k: {x: v for x, v in r.items() if x != "losses"}
                                                 for k, r in records.items()}, indent=1))
    print("\n".join(lines))


def part_mss(args, out: Path) -> None:
    ict = out / "ict" / "checkpoints"
    base = points(json.loads((out / "test-ict.json").read_text())["metrics"])
    t0, c0 = time.perf_counter(), cpu_s()
    r = run_stage("mss", args, ict, out, out / "mss2", ["task.passage_length=128"])
    wall, cpu = time.perf_counter() - t0, cpu_s() - c0
    m = points(r["metrics"])
    lines = [
        "### Masked salient spans (REALM-style, from ICT)",
        "",
        f"Generated data (`megazoo task retrieval data`, the embedded corpus), not NQ. CPU, torch {args.threads} "
        f"threads, on a machine shared with other jobs (load average {os.getloadavg()[0]:.1f} at the end); wall "
        f"{wall:.0f} s, CPU {cpu:.0f} s.",
        "",
        f"{args.steps} steps of {args.batch} masked sentences (one salient span each, from the training questions' "
        f"positive passages) read over their top-{args.top_k} passages; the query tower (from the ICT checkpoint "
        f"above) and a MiniLM span reader trained on the marginal likelihood (lr {args.lr:g}, core trainer); "
        f"queries re-retrieved every {args.refresh} steps. DPR top-k on the generated nq-test questions "
        f"({r['n']}; 32 / 128 tokens, mean pooling):",
        "",
        "| retriever | top-1 | top-5 | top-20 |",
        "|---|---|---|---|",
        f"| ICT | {base['top1']:.1f} | {base['top5']:.1f} | {base['top20']:.1f} |",
        f"| ICT + MSS | {m['retrieval_top1']:.1f} | {m['retrieval_top5']:.1f} | {m['retrieval_top20']:.1f} |",
        "",
        f"MSS changes top-20 by {m['retrieval_top20'] - base['top20']:+.1f} points over ICT alone (one seed; one "
        f"question is {100 / r['n']:.1f} points).",
        ""]
    (ROOT / "retrieval_mss.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
