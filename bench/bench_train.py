"""Training throughput: megazoo against transformers' GPT2LMHeadModel, in one run on this CPU.

Model (both): 6 layers, hidden 768, 12 heads, vocabulary 32768, sequence 512, micro-batch 4,
AdamW, no dropout, tied embeddings. Measured in the same process, steps interleaved round-robin so
that load on a shared machine hits every contender alike:
  - HF fp32 vs megazoo fp32 (2 threads each);
  - HF under bf16 autocast vs megazoo's bf16 policy (bf16 model, fp32 main params and grads);
  - megazoo TP=2 (2 ranks x 1 thread) vs TP=1 (1 rank x 2 threads), fp32.
Model FLOPs follow Megatron's formula (the same count for both); MFU divides by the dense GEMM
peak of the same dtype measured on this machine during the run, with 2 threads.

    python bench/bench_train.py [--steps 3] [--write]      (--write updates bench/RESULTS.md)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch
from results import write_section as write_results_section  # bench/results.py

os.environ.setdefault("MEGAZOO_PEAK_TFLOPS", "1")  # the trainer's own peak is not used here

SIZES = dict(num_layers=6, hidden_size=768, num_heads=12, vocab_size=32768, seq_length=512)
MICRO = 4
THREADS = 2


def mz_config(run_dir: str, dtype: str = "fp32", tp: int = 1):
    from megazoo.core.train import RunConfig

    sets = [f"model.{k}={v}" for k, v in SIZES.items()] + [
        "model.arch=gpt", f"train.micro_batch={MICRO}", f"train.global_batch={MICRO}", "train.steps=1000",
        "data.synthetic=true", f"precision.dtype={dtype}", f"parallel.tp={tp}", "log.progress=false",
        "checkpoint.save=false", "checkpoint.resume=none", f"log.dir={run_dir}", "train.eval_iters=1"]
    return RunConfig.load("gpt-tiny", sets)


class Megazoo:
    def __init__(self, dtype: str, run_dir: str, tp: int = 1):
        from megazoo.core.train import Trainer

        self.trainer = Trainer(mz_config(run_dir, dtype, tp), monitor=False)

    def step(self) -> float:
        tr = self.trainer
        mbs = tr.train_data.step(tr.consumed_samples)
        t = time.perf_counter()
        tr.train_step(mbs)
        return time.perf_counter() - t


class HF:
    def __init__(self, autocast_bf16: bool, model=None, seed: int = 0):
        from transformers import GPT2Config, GPT2LMHeadModel

        if model is None:
            torch.manual_seed(seed)
            cfg = GPT2Config(n_layer=SIZES["num_layers"], n_embd=SIZES["hidden_size"], n_head=SIZES["num_heads"],
                             vocab_size=SIZES["vocab_size"], n_positions=SIZES["seq_length"], resid_pdrop=0.0,
                             embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)
            model = GPT2LMHeadModel(cfg)  # transformers picks SDPA attention when torch has it
            model.train()
        self.model, self.autocast = model, autocast_bf16
        self.opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
        g = torch.Generator().manual_seed(1)
        self.ids = torch.randint(0, SIZES["vocab_size"], (MICRO, SIZES["seq_length"]), generator=g)

    def step(self) -> float:
        t = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.autocast):
            loss = self.model(input_ids=self.ids, labels=self.ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return time.perf_counter() - t


def flops_per_step() -> float:
    from megazoo.core.train.models import load_builder

    return load_builder({"arch": "gpt", **SIZES}).flops_per_iteration(MICRO, 1)


def _tp2_rank(run_dir: str, steps: int) -> list[float]:
    m = Megazoo("fp32", run_dir, tp=2)
    m.step()  # warm-up
    return [m.step() for _ in range(steps)]


def _zero_bytes(run_dir: str) -> dict:
    """Per-rank bytes of fp32 main params + Adam state per parameter, bf16 model, dp = world size."""
    from megazoo.core.train import RunConfig, Trainer

    out = {}
    for distributed in (False, True):
        sets = ["model.num_layers=4", "model.hidden_size=256", "model.num_heads=4", "model.vocab_size=32768",
                "model.seq_length=128", "train.micro_batch=1", "train.global_batch=2", "train.steps=1",
                "train.eval_iters=1", "precision.dtype=bf16", f"optim.distributed={str(distributed).lower()}",
                "data.synthetic=true", "log.progress=false", "checkpoint.save=false", "checkpoint.resume=none",
                f"log.dir={run_dir}/{distributed}"]
        trainer = Trainer(RunConfig.load("gpt-tiny", sets), monitor=False)
        trainer.train_step(trainer.train_data.step(0))
        b = trainer.optimizer.state_bytes()
        params = sum(p.numel() for p in trainer.optimizer.params)
        out[distributed] = (b["main_params"] + b["optimizer_state"]) / params
        trainer.close()
    return out


def memory_section(out_dir: str) -> str:
    from megazoo.core.parallel.context import ParallelContext
    from megazoo.core.parallel.launch import spawn
    from megazoo.core.train.memory import saved_activation_bytes
    from megazoo.core.train.models import load_builder

    ctx = ParallelContext.single()
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, SIZES["vocab_size"], (MICRO, SIZES["seq_length"]), generator=g)
    rows = []
    for drop in (0.0, 0.1):
        base = None
        for recompute in ("none", "selective", "full"):
            builder = load_builder({"arch": "gpt", **SIZES, "attention_dropout": drop}, recompute)
            n = saved_activation_bytes(builder.chunks(ctx, 1), ids, ids)
            base = base or n
            rows.append(f"| {recompute} | {drop} | {n / 2**20:,.0f} | {100 * (1 - n / base):.0f}% |")
    d = 2
    zero = spawn(_zero_bytes, d, f"{out_dir}/zero", timeout=1200, threads=1)[0]
    lines = ["Activation memory kept for backward after one forward (bench model, micro-batch 4; "
             "`megazoo.core.train.memory.saved_activation_bytes`, distinct storages saved by autograd, "
             "parameters excluded). On CPU, SDPA's flash kernel never stores the s x s attention matrix, so "
             "selective recompute only pays off when attention dropout forces the explicit path:", "",
             "| recompute | attention dropout | saved activations (MiB) | saving |", "|---|---:|---:|---:|", *rows, "",
             f"Distributed optimizer, bf16 model (4 layers, hidden 256, vocab 32768), dp={d}, measured per rank: "
             f"fp32 main params + Adam state = {zero[True]:.2f} bytes/param (12/d = {12 / d:.2f}); without it "
             f"{zero[False]:.2f} (12)."]
    return "\n".join(lines)


def main(argv=None) -> int:
    from megazoo.core.parallel.launch import spawn
    from megazoo.core.train.flops import gemm_flops

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=3, help="timed steps per contender (after one warm-up)")
    ap.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    ap.add_argument("--out", default="/tmp/megazoo-bench-train")
    ap.add_argument("--smoke", action="store_true", help="2 layers, seq 128: a quick check of the script (not recorded)")
    args = ap.parse_args(argv)
    if args.smoke:
        SIZES.update(num_layers=2, seq_length=128)
        args.write = False
    torch.set_num_threads(THREADS)
    flops = flops_per_step()
    tokens = MICRO * SIZES["seq_length"]
    peak = {"fp32": gemm_flops(torch.float32, "cpu", THREADS, size=1024, seconds=1.0),
            "bf16": gemm_flops(torch.bfloat16, "cpu", THREADS, size=1024, seconds=1.0)}
    print(f"peak GEMM ({THREADS} threads): fp32 {peak['fp32'] / 1e12:.3f}, bf16 {peak['bf16'] / 1e12:.3f} TFLOP/s", flush=True)

    hf32 = HF(False)
    contenders = {"HF fp32": (hf32, "fp32"), "megazoo fp32": (Megazoo("fp32", f"{args.out}/fp32"), "fp32"),
                  "HF bf16 autocast": (HF(True, model=hf32.model), "bf16"),
                  "megazoo bf16": (Megazoo("bf16", f"{args.out}/bf16"), "bf16")}
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for rnd in range(args.steps + 1):  # round 0 warms up
        for name, (c, _) in contenders.items():
            dt = c.step()
            if rnd > 0:
                times[name].append(dt)
            print(f"  round {rnd} {name}: {dt:.2f} s", flush=True)
    # TP=1 (1 rank, 2 threads) vs TP=2 (2 ranks x 1 thread), fp32, the same model
    tp1 = [contenders["megazoo fp32"][0].step() for _ in range(args.steps)]
    del contenders, hf32
    tp2 = spawn(_tp2_rank, 2, f"{args.out}/tp2", args.steps, timeout=1800, threads=1)
    times["megazoo fp32 TP=1 (1 rank x 2 threads)"] = tp1
    times["megazoo fp32 TP=2 (2 ranks x 1 thread)"] = [max(a, b) for a, b in zip(*tp2)]
    for rnd in range(args.steps):
        print(f"  TP=1 {tp1[rnd]:.2f} s, TP=2 {times['megazoo fp32 TP=2 (2 ranks x 1 thread)'][rnd]:.2f} s", flush=True)

    # measure the peak again now: on a shared machine the load at start-up can hide part of it
    for key, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        peak[key] = max(peak[key], gemm_flops(dtype, "cpu", THREADS, size=1536, seconds=1.0))
    peak_of = lambda name: peak["bf16" if "bf16" in name else "fp32"]  # noqa: E731
    rows = []
    for name, ts in times.items():
        dt = min(ts)  # best of the timed steps: load on a shared machine only ever adds time
        rows.append((name, dt, tokens / dt, flops / dt / 1e12, flops / dt / peak_of(name)))
    by = {r[0]: r for r in rows}
    ratios = {
        "megazoo fp32 / HF fp32 (target >= 1.0)": by["megazoo fp32"][2] / by["HF fp32"][2],
        "megazoo bf16 / HF bf16 autocast (target >= 1.5)": by["megazoo bf16"][2] / by["HF bf16 autocast"][2],
        "megazoo bf16 MFU vs bf16 GEMM peak (target >= 0.5)": by["megazoo bf16"][4],
        "TP=2 / TP=1 (target >= 0.8)": by["megazoo fp32 TP=2 (2 ranks x 1 thread)"][2]
        / by["megazoo fp32 TP=1 (1 rank x 2 threads)"][2],
    }
    lines = ["| contender | best step (s) | tokens/s | TFLOP/s | MFU |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {n} | {dt:.2f} | {tps:,.0f} | {tf:.3f} | {100 * m:.1f}% |" for n, dt, tps, tf, m in rows]
    lines += ["", "| ratio | value |", "|---|---:|"] + [f"| {k} | {v:.2f} |" for k, v in ratios.items()]
    load = os.getloadavg()[0]
    header = (f"Model: 6 layers, hidden 768, 12 heads, vocab 32768, seq 512, micro-batch 4, AdamW "
              f"({flops / 1e12:.3f} TFLOP per step, Megatron formula). {args.steps} timed steps each after one "
              f"warm-up, interleaved; best step per contender (load only adds time). Peak GEMM measured in the run, best of start and end ({THREADS} threads): fp32 "
              f"{peak['fp32'] / 1e12:.3f}, bf16 {peak['bf16'] / 1e12:.3f} TFLOP/s. Load average at the end: {load:.1f} "
              f"on {os.cpu_count()} cores. Run: `python bench/bench_train.py --write` ({time.strftime('%Y-%m-%d %H:%M')}).")
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if "avx512_bf16" not in flags and "amx_bf16" not in flags:
        header += (" This CPU has no native bf16 (no AVX512-BF16/AMX): its bf16 GEMM is slower than fp32, and both "
                   "bf16 contenders spend most of a step in it, which caps the bf16 ratio near 1. MFU above 100% "
                   "means the GEMM peak was measured while the machine was busier than during the step.")
    text = header + "\n\n" + "\n".join(lines)
    if not args.smoke:
        text += "\n\n" + memory_section(args.out)
    print(text)
    if args.write:
        write_section(text)
    return 0


SECTION = "## Training throughput (bench/bench_train.py)"


def write_section(body: str) -> None:
    write_results_section(SECTION, SECTION + "\n\n" + body)


if __name__ == "__main__":
    sys.exit(main())
