"""Where megazoo's training step spends its time outside the linear GEMMs (issue 42, point 2): one
step of bench/bench_train.py's model (6 x 768, vocabulary 32768, sequence 512, micro-batch 4,
AdamW) under torch.profiler, per op (self CPU time, CPU only), grouped into matrix products (the
linear layers' and the output head's GEMMs and attention's batched products: aten::mm/addmm/bmm/
baddbmm, oneDNN's linear) and everything else, for fp32 and bf16. bench_train.py's "beyond the GEMMs"
figure is coarser: the step minus the linear layers' GEMMs timed alone (attention's products and
the allocator's and the kernels' own overheads fall on its other side).

    python bench/bench_step_profile.py [--dtypes fp32,bf16] [--top 15] [--write]

This is the "before" listing: it names the ops a later change must shrink. Figures on generated
(synthetic) tokens, 2 threads.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(__file__))
from bench_train import THREADS, mz_config  # noqa: E402  (bench/bench_train.py: the same model)
from results import write_section  # noqa: E402

SECTION = "## Training step per op, outside the GEMMs (bench/bench_step_profile.py)"
GEMMS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::_mkldnn_linear", "mkldnn::_linear_pointwise")


def profile(dtype: str, top: int) -> dict:
    from megazoo.core.train import Trainer
    torch.set_num_threads(THREADS)
    with tempfile.TemporaryDirectory() as run:
        trainer = Trainer(mz_config(run, dtype), monitor=False)
        for _ in range(2):  # warm-up: Adam's state, the allocator, the kernels' first calls
            trainer.train_step(trainer.train_data.step(trainer.consumed_samples))
        batch = trainer.train_data.step(trainer.consumed_samples)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            trainer.train_step(batch)
        trainer.close()
    ops = [(e.key, e.self_cpu_time_total / 1e6, e.count) for e in prof.key_averages()]
    total = sum(s for _, s, _ in ops)
    gemm = sum(s for k, s, _ in ops if k in GEMMS)
    rest = sorted(((k, s, c) for k, s, c in ops if k not in GEMMS), key=lambda x: -x[1])
    return {"total": total, "gemm": gemm, "rest": rest[:top]}


def table(results: dict, load: tuple) -> str:
    lines = [SECTION, "",
             f"One profiled step after two warm-up steps, self CPU time per op (torch.profiler, {THREADS} threads); "
             f"load average {load[0]:.2f} at the start, {load[1]:.2f} at the end; generated data, a 2-core AMD EPYC, "
             "2026-12-03. The profiler's own overhead makes the step longer than bench_train's.", ""]
    for dtype, r in results.items():
        outside = r["total"] - r["gemm"]
        lines += [f"{dtype}: step {r['total']:.2f} s of op time, matrix products {r['gemm']:.2f} s, everything else "
                  f"{outside:.2f} s ({100 * outside / r['total']:.0f}%). The largest of the rest:", "",
                  "| op | self CPU s | calls | share of the step |", "|---|---:|---:|---:|"]
        for key, s, count in r["rest"]:
            lines.append(f"| `{key}` | {s:.3f} | {count} | {100 * s / r['total']:.1f}% |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtypes", default="fp32,bf16")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = ap.parse_args(argv)
    load0 = os.getloadavg()[0]
    results = {d: profile(d, args.top) for d in args.dtypes.split(",")}
    text = table(results, (load0, os.getloadavg()[0]))
    print(text)
    if args.write:
        write_section(SECTION, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
