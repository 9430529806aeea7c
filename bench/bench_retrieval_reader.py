"""Reader benchmark on generated data: the span reader trained on fixed retrieval vs the reader and
query encoder trained end to end ("individual top-k"), exact match of the final answers on the
generated nq-test.json. Needs bench/bench_retrieval.py's runs (the data, the imported MiniLM and
the ICT + supervised retriever in runs/bench-retrieval/finetune/checkpoints).

    python bench/bench_retrieval_reader.py [reader|mss] [--out-dir runs/bench-retrieval] [--steps 40] [--threads 2]

Both runs start from the same reader (MiniLM) and retriever, with the same steps, questions and
seed; the only difference is whether the reader's passage posterior trains the query tower (with
the training questions re-retrieved every --refresh steps). Writes OUT/reader-{reader,e2e}/ and
bench/retrieval_reader.md (the bench/RESULTS.md section).

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
    ap.add_argument("part", nargs="?", default="reader", choices=("reader", "mss", "table"),
                    help="table: the reader section from finished OUT/reader-{reader,e2e}/reader.json runs (each "
                         "stage run on its own, e.g. in parallel; --cpu gives their CPU seconds)")
    ap.add_argument("--cpu", default="", help="table: CPU seconds of the reader and e2e runs, e.g. 600,700")
    ap.add_argument("--out-dir", default="runs/bench-retrieval")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--reader-length", type=int, default=128)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--top-k", type=int, default=4)
    ap.add_argument("--refresh", type=int, default=10)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--retriever-lr", type=float, default=2e-5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    import torch

    from megazoo.tasks.retrieval.reader_cli import load_recipe
    from megazoo.tasks.retrieval.reader_train import train_reader

    torch.set_num_threads(args.threads)
    out = Path(args.out_dir)
    retriever = out / "finetune" / "checkpoints"
    if not retriever.is_dir():
        raise SystemExit(f"{retriever}: run bench/bench_retrieval.py ict and finetune first")
    if args.part == "mss":
        return part_mss(args, out)
    t0, c0 = time.perf_counter(), cpu_s()
    records = {}
    if args.part == "table":
        cpus = [float(x) for x in args.cpu.split(",")] if args.cpu else [float("nan")] * 2
        for stage, c in zip(("reader", "e2e"), cpus):
            r = json.loads((out / f"reader-{stage}" / "reader.json").read_text())
            r["wall_s"], r["cpu_s"] = r["train_s"] + r["eval_s"], c
            records[stage] = r
        return write_reader_section(args, out, records, sum(r["wall_s"] for r in records.values()), sum(cpus))
    for stage in ("reader", "e2e"):
        t1, c1 = time.perf_counter(), cpu_s()
        cfg = load_recipe(stage, f"retrieval-{stage}", [
            f"task.retriever={retriever}", f"train.init_from={out / 'minilm'}", f"data.path={out / 'data'}",
            f"task.top_k={args.top_k}", f"task.refresh_steps={args.refresh}", f"task.retriever_lr={args.retriever_lr}",
            f"train.steps={args.steps}", f"train.micro_batch={args.batch}", f"train.global_batch={args.batch}",
            f"train.lr={args.lr}", f"task.reader_length={args.reader_length}", "task.question_length=32",
            f"log.dir={out / ('reader-' + stage)}"])
        r = train_reader(cfg)
        r["wall_s"], r["cpu_s"] = time.perf_counter() - t1, cpu_s() - c1
        records[stage] = r
        print(stage, r["metrics"], f"{r['wall_s']:.0f} s wall", flush=True)
    write_reader_section(args, out, records, time.perf_counter() - t0, cpu_s() - c0)


def write_reader_section(args, out: Path, records: dict, wall: float, cpu: float) -> None:
    k = args.top_k
    fixed, e2e = records["reader"], records["e2e"]
    lines = [
        "### Reader: fixed retrieval vs end-to-end (individual top-k)",
        "",
        f"Generated data (`megazoo task retrieval generate`, the embedded corpus), not NQ. CPU, torch {args.threads} "
        f"threads, on a machine shared with other jobs (load average {os.getloadavg()[0]:.1f} at the end); wall "
        f"{wall:.0f} s, CPU {cpu:.0f} s.",
        "",
        f"Reader: all-MiniLM-L6-v2 with a span head, {args.steps} steps of {args.batch} training questions, each read "
        f"over its top-{k} passages (marginal likelihood over passages and answer occurrences), lr {args.lr:g}. "
        f"Retriever: the ICT + supervised checkpoint above. End to end: the query tower trained too (lr "
        f"{args.retriever_lr:g}), training questions re-retrieved every {args.refresh} steps "
        f"({e2e['refreshes']} refreshes); context tower and index fixed. Exact match on the {fixed['n']} generated "
        f"nq-test questions.",
        "",
        "| reader | EM | retrieval top-1 | top-5 | top-20 | wall (s) | CPU (s) |",
        "|---|---|---|---|---|---|---|",
        *[f"| {name} | {r['metrics']['em']:.1f} | {r['metrics']['retrieval_top1']:.1f} | "
          f"{r['metrics']['retrieval_top5']:.1f} | {r['metrics']['retrieval_top20']:.1f} | {r['wall_s']:.0f} | "
          f"{r['cpu_s']:.0f} |" for name, r in (("fixed retrieval", fixed), ("end-to-end", e2e))],
        "",
        f"End-to-end training changes EM by {e2e['metrics']['em'] - fixed['metrics']['em']:+.1f} points over the reader "
        f"on fixed retrieval (one seed; {fixed['n']} questions, so one question is {100 / fixed['n']:.1f} points).",
        ""]
    (ROOT / "retrieval_reader.md").write_text("\n".join(lines))
    (out / "reader.json").write_text(json.dumps({k: {x: v for x, v in r.items() if x != "losses"}
                                                 for k, r in records.items()}, indent=1))
    print("\n".join(lines))


def part_mss(args, out: Path) -> None:
    from megazoo.tasks.retrieval.reader_cli import load_recipe
    from megazoo.tasks.retrieval.reader_train import train_reader

    ict = out / "ict" / "checkpoints"
    base = json.loads((out / "test-ict.json").read_text())["metrics"]
    t0, c0 = time.perf_counter(), cpu_s()
    cfg = load_recipe("mss", "retrieval-mss", [
        f"task.retriever={ict}", f"train.init_from={out / 'minilm'}", f"data.path={out / 'data'}",
        f"task.top_k={args.top_k}", f"task.refresh_steps={args.refresh}", f"task.retriever_lr={args.retriever_lr}",
        f"train.steps={args.steps}", f"train.micro_batch={args.batch}", f"train.global_batch={args.batch}",
        f"train.lr={args.lr}", f"task.reader_length={args.reader_length}", "task.question_length=32",
        "task.passage_length=128", f"log.dir={out / 'mss'}"])
    r = train_reader(cfg)
    wall, cpu = time.perf_counter() - t0, cpu_s() - c0
    m = r["metrics"]
    lines = [
        "### Masked salient spans (REALM-style, from ICT)",
        "",
        f"Generated data (`megazoo task retrieval generate`, the embedded corpus), not NQ. CPU, torch {args.threads} "
        f"threads, on a machine shared with other jobs (load average {os.getloadavg()[0]:.1f} at the end); wall "
        f"{wall:.0f} s, CPU {cpu:.0f} s.",
        "",
        f"{args.steps} steps of {args.batch} masked sentences (one salient span each, from the training questions' "
        f"positive passages) read over their top-{args.top_k} passages; the query tower (from the ICT checkpoint "
        f"above, lr {args.retriever_lr:g}) and a MiniLM span reader (lr {args.lr:g}) trained on the marginal likelihood; "
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
