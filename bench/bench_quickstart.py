"""Wall time of the main job (`megazoo quickstart`) on this machine; target: under 6 minutes on 2
cores. Records the figure, the loss fall and the export check in bench/RESULTS.md.

    python bench/bench_quickstart.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from results import write_section as write_results_section  # bench/results.py

HERE = Path(__file__).resolve().parent
SECTION = "## Main job wall time (bench/bench_quickstart.py)"


def write_section(text: str) -> None:
    write_results_section(SECTION, text)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="mz-quickstart-")) / "run"
    load = os.getloadavg()[0]
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "megazoo", "quickstart", "--out", str(out)],
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode:
        print(done.stdout[-3000:], done.stderr[-3000:])
        return done.returncode
    losses = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    train = [m["loss"] for m in losses if m.get("split", "train") == "train" and "loss" in m]
    tenth = max(1, len(train) // 10)
    first, last = sum(train[:tenth]) / tenth, sum(train[-tenth:]) / tenth
    summary = (out / "summary.md").read_text()
    diff = re.search(r"by at most ([0-9.e+-]+)", summary).group(1)
    text = (f"{SECTION}\n\n"
            f"`megazoo quickstart` end to end (4 ranks, TP=2 x PP=2, {len(train)} steps, held-out evaluation, "
            f"checkpoint, HF export, transformers reload and generation), {os.cpu_count()} cores, 1-minute "
            f"load average {load:.1f} at the start.\n\n"
            f"| figure | value | target |\n|---|---|---|\n"
            f"| wall time | {wall:.0f} s | < 360 s |\n"
            f"| loss, first 10% -> last 10% of steps | {first:.3f} -> {last:.3f} ({100 * (1 - last / first):.1f}% lower) "
            f"| >= 30% lower |\n"
            f"| exported logits vs megazoo | max abs difference {diff} | <= 1e-5 |\n")
    write_section(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
