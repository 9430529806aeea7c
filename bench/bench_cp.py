"""Context-parallel attention benchmark: attention memory per rank and forward + backward time at
cp 1, 2 and 4 on one long sequence (gloo ranks on this machine's CPUs).

    python bench/bench_cp.py [--seq 2048] [--heads 8] [--kv-heads 4] [--head-dim 64] [--repeats 3]

Each rank holds q [1, heads, seq / cp, d] and k, v [1, kv, seq / cp, d] (fp32, the load-balanced
chunks) and runs ring attention (megazoo.core.parallel.ring_attention, causal) forward and
backward, with each of its block kernels (torch's CPU flash attention, the default on CPUs, and the
explicit matmul-softmax-matmul). cp 1 runs the same code as a ring of one (the like-for-like
baseline), and also the model's own core attention without cp (megazoo.core.nn.fast_attention).

Memory is measured, not computed: a TorchDispatchMode sees every tensor an operator returns during
the forward + backward and keeps a weak reference to its storage; after each operator the bytes of
the storages still alive are summed, and the peak of that sum is the attention's memory per rank
(inputs excluded, received key/value buffers included). Times are the median of `repeats`
untracked forward + backward passes per rank (the slowest rank's). Then whole training steps of a
tiny Llama at cp 1, 2 and 4 through the trainer (step time, losses). Writes bench/cp_results.json
and prints the bench/RESULTS.md section.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from megazoo.core.nn.fast_attention import fast_attention
from megazoo.core.parallel.context import ParallelConfig, ParallelContext
from megazoo.core.parallel.cp_split import chunk_index
from megazoo.core.parallel.launch import spawn
from megazoo.core.parallel.ring_attention import ring_attention

ROOT = Path(__file__).resolve().parent
SECTION = "## Context parallelism: ring attention memory and time (bench/bench_cp.py)"


class LiveBytes(TorchDispatchMode):
    """Peak bytes of the tensor storages created inside the mode that are alive at once."""

    def __init__(self):
        super().__init__()
        self.live: dict[int, tuple] = {}
        self.peak = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.device.type == "cpu":
                storage = t.untyped_storage()
                key = storage.data_ptr()
                if key not in self.live or self.live[key][0].expired():
                    self.live[key] = (StorageWeakRef(storage), storage.nbytes())
        self.live = {k: v for k, v in self.live.items() if not v[0].expired()}
        self.peak = max(self.peak, sum(v[1] for v in self.live.values()))
        return out


def inputs(args, cp: int, cp_rank: int):
    g = torch.Generator().manual_seed(0)
    full = [torch.randn(1, n, args.seq, args.head_dim, generator=g) for n in (args.heads, args.kv_heads, args.kv_heads)]
    index = chunk_index(args.seq, cp, cp_rank)
    return [t.index_select(2, index).requires_grad_(True) for t in full]


def fwd_bwd(fn, q, k, v) -> None:
    out = fn(q, k, v)
    out.backward(torch.ones_like(out))
    for t in (q, k, v):
        t.grad = None


def measure(args, cp: int, kernel: str) -> dict:
    """Peak attention bytes and the median forward + backward seconds of this rank."""
    ctx = ParallelContext.build(ParallelConfig(cp=cp)) if cp > 1 else ParallelContext(cp=1)
    q, k, v = inputs(args, cp, ctx.cp_rank)
    scale = args.head_dim ** -0.5
    if kernel == "model":
        def fn(q, k, v):
            return fast_attention(q, k, v, scale, True)
    else:
        def fn(q, k, v):
            return ring_attention(q, k, v, scale, True, ctx, kernel)
    fwd_bwd(fn, q, k, v)  # warm-up
    with LiveBytes() as tracker:
        fwd_bwd(fn, q, k, v)
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        fwd_bwd(fn, q, k, v)
        times.append(time.perf_counter() - t0)
    return {"peak_bytes": tracker.peak, "seconds": statistics.median(times)}


MODEL = ["model.arch=llama", "model.num_layers=2", "model.hidden_size=64", "model.num_heads=8", "model.num_kv_heads=4",
         "model.vocab_size=512", "train.micro_batch=1", "train.global_batch=1", "train.steps=4", "train.eval_iters=1",
         "train.warmup=1", "log.progress=false", "log.plot=false", "checkpoint.save=false", "checkpoint.resume=none"]


def model_step(run_dir: str, seq: int, cp: int) -> dict:
    """Train the tiny Llama (synthetic data, one sequence of `seq` tokens per step) at cp; the median
    step time of steps 2-4 from its metrics (rank function; rank 0 writes)."""
    from megazoo.core.train import RunConfig, Trainer

    cfg = RunConfig.load("gpt-tiny", MODEL + [f"model.seq_length={seq}", f"parallel.cp={cp}", f"log.dir={run_dir}"])
    trainer = Trainer(cfg)
    try:
        summary = trainer.fit()
    finally:
        trainer.close()
    lines = (Path(run_dir) / "metrics.jsonl").read_text().splitlines() if trainer.is_logger else []
    times = [r["step_time"] for r in map(json.loads, lines) if "step_time" in r][1:]
    return {"step_s": statistics.median(times) if times else None, "losses": summary["losses"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    wall0, cpu0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    torch.set_num_threads(1)  # as every spawned rank: one thread per rank
    rows = []
    for cp, kernel in ((1, "model"), (1, "flash"), (2, "flash"), (4, "flash"), (1, "explicit"), (2, "explicit"),
                       (4, "explicit")):
        per_rank = [measure(args, 1, kernel)] if cp == 1 else spawn(measure, cp, args, cp, kernel, timeout=1800)
        rows.append({"cp": cp, "kernel": kernel, "peak_mib": max(r["peak_bytes"] for r in per_rank) / 2**20,
                     "seconds": max(r["seconds"] for r in per_rank)})
        print(json.dumps(rows[-1]), flush=True)
    os.environ.setdefault("MEGAZOO_PEAK_TFLOPS", "1")  # MFU is not reported here; skip the peak measurement
    steps = []
    with tempfile.TemporaryDirectory() as tmp:
        for cp in (1, 2, 4):
            run_dir = f"{tmp}/cp{cp}"
            got = model_step(run_dir, args.seq, 1) if cp == 1 else spawn(model_step, cp, run_dir, args.seq, cp,
                                                                           timeout=1800)[0]
            steps.append({"cp": cp, "step_s": got["step_s"], "losses": got["losses"]})
            print(json.dumps(steps[-1]), flush=True)
    self_, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (self_.ru_utime + self_.ru_stime - cpu0.ru_utime - cpu0.ru_stime) + kids.ru_utime + kids.ru_stime
    result = {"settings": vars(args), "rows": rows, "steps": steps, "wall_s": time.perf_counter() - wall0, "cpu_s": cpu}
    (ROOT / "cp_results.json").write_text(json.dumps(result, indent=1) + "\n")
    print(section(result))


def section(result: dict) -> str:
    a = result["settings"]
    base = {r["kernel"]: r for r in result["rows"] if r["cp"] == 1}
    lines = [SECTION, "",
             f"One causal sequence of {a['seq']} tokens, {a['heads']} query heads, {a['kv_heads']} KV heads (GQA), "
             f"head dim {a['head_dim']}, fp32, batch 1; attention forward + backward per rank (gloo ranks, one "
             "thread each, on this 2-core machine shared with other jobs). Memory: measured peak of live tensor "
             "storage created during forward + backward (a TorchDispatchMode tracking every operator's outputs "
             "by weak reference; inputs excluded). Time: median of "
             f"{a['repeats']} passes, slowest rank.", "",
             "| cp | attention | memory per rank | vs cp 1, same kernel | fwd+bwd time per rank |",
             "|---:|---|---:|---:|---:|"]
    names = {"model": "model's core attention, no ring (fast_attention)", "flash": "ring, CPU flash blocks",
             "explicit": "ring, explicit blocks"}
    for r in result["rows"]:
        lines.append(f"| {r['cp']} | {names[r['kernel']]} | {r['peak_mib']:.1f} MiB | "
                     f"{r['peak_mib'] / base[r['kernel']]['peak_mib']:.2f}x | {r['seconds']:.2f} s |")
    lines += ["", f"Whole training steps (the trainer, synthetic data): a 2-layer Llama (hidden 64, 8 heads, 4 KV "
              f"heads) on one sequence of {a['seq']} tokens per step, world = cp ranks; median step time of steps "
              "2-4 (rank 0), and the step losses, which agree across cp (the parity tests hold them to 1e-5).", "",
              "| cp | step time | losses (4 steps) |", "|---:|---:|---|"]
    for r in result["steps"]:
        lines.append(f"| {r['cp']} | {r['step_s']:.2f} s | {', '.join(f'{x:.5f}' for x in r['losses'])} |")
    lines += ["", f"Whole benchmark: {result['wall_s']:.0f} s wall, {result['cpu_s']:.0f} s CPU (all ranks), on a "
              "shared 2-core machine (timings are noisy; memory is not)."]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
