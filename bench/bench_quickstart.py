"""Time of the main job (`megazoo quickstart`), in one run: the previous version's path
(`--fast`: pretraining, export, summary) and the full default (plus SmolLM2 at tp=2, the
leaderboard and the task step), each stage's wall and CPU seconds, and the machine's load.
Target: the default under 5 minutes on 2 quiet cores. On a shared machine wall time says little:
the CPU time (all processes of the run, all threads) and the load average are recorded beside it,
and CPU seconds / 2 is the quiet-machine estimate for 2 cores. Writes bench/RESULTS.md.

    python bench/bench_quickstart.py [--out DIR] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from results import write_section as write_results_section  # bench/results.py

SECTION = "## Main job wall time (bench/bench_quickstart.py)"
TARGET_S = 300


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed_run(out: Path, *flags: str) -> dict:
    """Run the quickstart; wall, CPU (it and every rank it started), load average around it."""
    load, cpu, start = os.getloadavg()[0], children_cpu(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "megazoo", "quickstart", "--out", str(out), *flags],
                          capture_output=True, text=True)
    record = {"flags": " ".join(flags) or "(default)", "wall": time.perf_counter() - start, "cpu": children_cpu() - cpu,
              "load_start": load, "load_end": os.getloadavg()[0], "code": done.returncode}
    if done.returncode:
        print(done.stdout[-3000:], done.stderr[-3000:])
        return record
    record["stages"] = json.loads((out / "stages.json").read_text())
    record["summary"] = (out / "summary.md").read_text()
    return record


def figures(out: Path, summary: str) -> dict:
    losses = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    train = [m["loss"] for m in losses if m.get("split", "train") == "train" and "loss" in m]
    tenth = max(1, len(train) // 10)
    first, last = sum(train[:tenth]) / tenth, sum(train[-tenth:]) / tenth
    return {"steps": len(train), "first": first, "last": last,
            "diff": re.search(r"by at most ([0-9.e+-]+)", summary).group(1)}


def section(fast: dict, full: dict, out: Path) -> str:
    f = figures(out / "full", full["summary"])
    rows = []
    for name in full["stages"]["wall"]:
        wall, cpu = full["stages"]["wall"][name], full["stages"]["cpu"][name]
        before = fast["stages"]["wall"].get(name)
        rows.append(f"| {name} | {wall:.0f} | {100 * wall / full['wall']:.0f}% | {cpu:.0f} | "
                    f"{'-' if before is None else f'{before:.0f}'} |")
    board = json.loads((out / "full" / "leaderboard" / "results.json").read_text())["results"]
    task = re.search(r"\| MiniLM-L6 .*\| ([0-9.]+) \| \*\*([0-9.]+)\*\* \|", full["summary"])
    same = "identical" if "identical, token for token" in full["summary"] else "DIFFERENT"
    quiet = full["cpu"] / 2
    lines = [
        SECTION, "",
        f"`megazoo quickstart` in one run: first `--fast` (the previous version's path: 4 ranks, TP=2 x PP=2, "
        f"{f['steps']} steps, held-out evaluation, checkpoint, HF export and reload; the sample is now drawn with "
        "temperature by megazoo's generation), then the full default (adds SmolLM2-135M imported at tp=2 and "
        "continued on 2 ranks beside transformers, the zero-shot leaderboard of both models on generated "
        "LAMBADA/HellaSwag-format files, and the MiniLM NER task step). "
        f"{os.cpu_count()} cores, **shared with other jobs** (1-minute load average "
        f"{fast['load_start']:.1f} -> {fast['load_end']:.1f} during `--fast`, {full['load_start']:.1f} -> "
        f"{full['load_end']:.1f} during the default): wall times are inflated by the sharing; CPU seconds (every "
        "process of the run, all threads) / 2 cores estimate a quiet machine.", "",
        "| run | wall s | CPU s | quiet 2-core estimate (CPU s / 2) | target |",
        "|---|---|---|---|---|",
        f"| `--fast` (previous path) | {fast['wall']:.0f} | {fast['cpu']:.0f} | {fast['cpu'] / 2:.0f} | |",
        f"| default (full) | {full['wall']:.0f} | {full['cpu']:.0f} | **{quiet:.0f}** | < {TARGET_S} s: "
        f"{'met' if quiet < TARGET_S else 'NOT met'} |", "",
        "Stages of the default run:", "",
        "| stage | wall s | share of wall | CPU s | wall s in the `--fast` run |",
        "|---|---|---|---|---|", *rows, "",
        f"- loss, first 10% -> last 10% of steps: {f['first']:.3f} -> {f['last']:.3f} "
        f"({100 * (1 - f['last'] / f['first']):.1f}% lower; target >= 30%)",
        f"- exported logits vs megazoo: max abs difference {f['diff']} (target <= 1e-5)",
        f"- SmolLM2 greedy continuation, megazoo at tp=2 vs transformers: {same}",
        "- leaderboard (generated data, n=" + str(board["smollm2-135m"]["lambada"]["n"]) + "): " + "; ".join(
            f"{m}: lambada acc {r['lambada']['acc']:.3f}, hellaswag acc_norm {r['hellaswag']['acc_norm']:.3f}"
            for m, r in board.items()),
    ]
    if task:
        lines.append(f"- task step, biomedical NER entity F1 on generated data: {task.group(1)} before, "
                     f"{task.group(2)} after")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    parser.add_argument("--no-write", action="store_true", help="print the section, leave RESULTS.md alone")
    args = parser.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="mz-quickstart-"))
    fast = timed_run(out / "fast", "--fast")
    full = timed_run(out / "full")
    (out / "bench.json").write_text(json.dumps({"fast": fast, "full": full}, indent=1))
    if fast["code"] or full["code"]:
        return 1
    text = section(fast, full, out)
    if not args.no_write:
        write_results_section(SECTION, text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
