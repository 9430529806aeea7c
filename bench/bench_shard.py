"""ZeRO-1/2/3 on the core (issue 43): bytes per parameter per rank, measured, beside the planner's
figure, and tokens/s of ZeRO-3 against ZeRO-1 with and without prefetch, in one run.

Model: GPT, 12 layers, hidden 768, 12 heads, vocabulary 32768, sequence 128 (110M parameters), fp32
(fp32 weights are their own main copy: weights 4 + gradients 4 + Adam 8 bytes per parameter, all
sharded by ZeRO-3). Each configuration runs in fresh gloo ranks (1 thread each), two steps of one
micro-batch of 2 sequences per rank; per rank it reports, after the second step:
  - what the rank holds between steps, measured from the tensors' storages (GradBuffers.bytes_held:
    weights, gradient buffers and reduced shard; the optimizer's state_bytes: main weights, Adam);
  - the most it held at any layer boundary of the step (weights + gradients, sampled by hooks at
    every unit's forward and every parameter's gradient), and the process's peak RSS;
  - the planner's bytes for the same layout (core/plan/memory.py stage_memory).
Then ZeRO-1 and ZeRO-3 (prefetch on and off) at dp 2 take turns step by step (--steps timed steps
each, after one warm-up), and the median step time of each is reported.

    python bench/bench_shard.py [--dps 1,2,4] [--steps 4] [--write]
    python bench/bench_shard.py --offload [--write]     # optimizer offload's device-side bytes

Figures on generated data (synthetic tokens); the speed part on a shared 2-core CPU is indicative.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time

SECTION = "## Sharded data parallelism: ZeRO-1/2/3 memory and speed (bench/bench_shard.py)"
MODEL = ["model.num_layers=12", "model.hidden_size=768", "model.num_heads=12", "model.vocab_size=32768",
         "model.seq_length=128"]
RUN = ["train.steps=100", "train.micro_batch=2", "log.progress=false", "log.plot=false", "checkpoint.save=false",
       "checkpoint.resume=none", "train.eval_iters=1", "optim.bucket_size=40000000"]
MODES = {"ZeRO-1": "optimizer", "ZeRO-2": "grads", "ZeRO-3": "full"}


def _config(root: str, dp: int, shard: str, *extra: str):
    from megazoo.core.train import RunConfig
    return RunConfig.load("gpt-tiny", MODEL + RUN + [f"train.global_batch={2 * dp}", f"parallel.shard={shard}",
                                                     f"log.dir={root}"] + list(extra))


def _planned(trainer, dp: int, shard: str) -> dict:
    """The planner's bytes for this rank (core/plan/memory.py): at rest (between steps: the part the
    measurement sees) and with the step's transients (the gradient bucket being reduced, ZeRO-3's
    gathered units)."""
    from megazoo.core.plan.memory import grad_buckets, megazoo_state_parts
    from megazoo.core.plan.shapes import Layout
    from megazoo.zoo.cards import card_shape
    shape = card_shape({"name": "bench", "arch": "gpt", "model": trainer.builder.to_dict()})
    layout = Layout(gpus=dp, micro_batch=2, global_batch=2 * dp, seq_length=128, precision="fp32",
                    bucket_size=40_000_000, shard=shard, distributed_optimizer=shard != "none")
    parts = megazoo_state_parts(shape, layout, 0, dp_rank=trainer.ctx.dp_rank)
    sharded_grads = shard in ("grads", "full") and dp > 1
    bucket = 4 * max(padded for _, padded, _, _ in grad_buckets(shape, layout, 0)) if sharded_grads else 0
    rest = {"weights": parts["weights"], "grads": parts["grads"] - bucket,
            "optimizer": parts["main_weights"] + parts["adam"]}
    return {**rest, "transient": bucket + parts["gathered"]}


def _memory_rank(root: str, dp: int, shard: str) -> dict:
    import torch
    from megazoo.core.train import Trainer
    torch.set_num_threads(1)
    trainer = Trainer(_config(f"{root}/{shard}-{dp}", dp, shard), monitor=False)
    buf, opt = trainer.optimizer.buffers, trainer.optimizer
    peak = [0]

    def sample(*_):
        held = buf.bytes_held()
        peak[0] = max(peak[0], held["weights"] + held["grads"])
    for chunk in trainer.chunks:
        for m in chunk.modules():
            if any(True for _ in m.parameters(recurse=False)):
                m.register_forward_pre_hook(sample)
    for p in buf.params:
        p.register_post_accumulate_grad_hook(sample)
    for _ in range(2):  # Adam's moments exist after the first step
        trainer.train_step(trainer.train_data.step(trainer.consumed_samples))
    held, state = buf.bytes_held(), opt.state_bytes()
    numel = sum(p.numel() for p in buf.params)
    try:
        planned = _planned(trainer, dp, shard)
    except Exception as e:  # the planner's API is not this bench's to fix: say so in the table
        planned = {"error": f"{type(e).__name__}: {e}"}
    trainer.close()
    return {"numel": numel, "weights": held["weights"], "grads": held["grads"],
            "optimizer": state["main_params"] + state["optimizer_state"], "peak": peak[0],
            "rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, "planned": planned}


def memory(root: str, dps: list[int]) -> dict:
    from megazoo.core.parallel.launch import spawn
    out = {}
    for dp in dps:
        for name, shard in MODES.items():
            t0 = time.perf_counter()
            ranks = spawn(_memory_rank, dp, root, dp, shard, timeout=1800)
            out[(name, dp)] = ranks[0]
            print(f"{name} dp {dp}: {json.dumps(ranks[0])} ({time.perf_counter() - t0:.0f} s)", flush=True)
    return out


def _speed_rank(root: str, shard: str, prefetch: bool, steps: int) -> list:
    import torch
    from megazoo.core.train import Trainer
    torch.set_num_threads(1)
    trainer = Trainer(_config(f"{root}/speed-{shard}-{prefetch}", 2, shard,
                              f"parallel.shard_prefetch={str(prefetch).lower()}"), monitor=False)
    times = []
    for i in range(steps + 1):
        t0 = time.perf_counter()
        trainer.train_step(trainer.train_data.step(trainer.consumed_samples))
        times.append(time.perf_counter() - t0)
    trainer.close()
    return times[1:]


def speed(root: str, steps: int) -> dict:
    from megazoo.core.parallel.launch import spawn
    cases = {"ZeRO-1": ("optimizer", True), "ZeRO-3, prefetch": ("full", True), "ZeRO-3, no prefetch": ("full", False)}
    out = {name: [] for name in cases}
    for turn in range(2):  # two rounds, alternating, so that load on a shared machine hits each alike
        for name, (shard, prefetch) in cases.items():
            out[name] += spawn(_speed_rank, 2, root, shard, prefetch, steps, timeout=1800)[0]
    return {name: statistics.median(t) for name, t in out.items()}


def table(mem: dict, spd: dict, load: tuple) -> str:
    lines = [SECTION, "",
             "Generated data (synthetic tokens); a shared 2-core AMD EPYC, 2026-12-03, gloo, 1 thread per rank, "
             f"load average {load[0]:.1f} at the start and {load[1]:.1f} at the end. GPT 12 x 768, vocabulary "
             "32768, fp32 (110M parameters).", "",
             "Bytes per parameter held by rank 0 between steps (measured from the tensors' storages: weights, "
             "fp32 gradient buffers and reduced shard, Adam moments), the planner's figure, and the most weights + "
             "gradients held at any layer boundary of a step:", "",
             "| sharding | dp | weights | grads | optimizer | total | planner total | planner error | "
             "peak weights+grads in a step | planner, with the step's transients | peak RSS (GiB) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (name, dp), r in mem.items():
        n = r["numel"]
        total = r["weights"] + r["grads"] + r["optimizer"]
        plan = r["planned"]
        if "error" in plan:
            planned, err, peak = plan["error"], "-", "-"
        else:
            ptotal = plan["weights"] + plan["grads"] + plan["optimizer"]
            planned, err = f"{ptotal / n:.2f}", f"{100 * (ptotal - total) / total:+.1f}%"
            peak = f"{(plan['weights'] + plan['grads'] + plan['transient']) / n:.2f}"
        lines.append(f"| {name} | {dp} | {r['weights'] / n:.2f} | {r['grads'] / n:.2f} | {r['optimizer'] / n:.2f} | "
                     f"{total / n:.2f} | {planned} | {err} | {r['peak'] / n:.2f} | {peak} | {r['rss_gib']:.2f} |")
    if spd:
        base = spd["ZeRO-1"]
        lines += ["", "Step time at dp 2 (median of the timed steps of two alternating rounds; one micro-batch of 2 x "
                  "128 tokens per rank):", "", "| sharding | s/step | tokens/s | vs ZeRO-1 |", "|---|---|---|---|"]
        for name, t in spd.items():
            lines.append(f"| {name} | {t:.2f} | {2 * 2 * 128 / t:.0f} | {base / t:.2f}x |")
    return "\n".join(lines) + "\n"


OFFLOAD_SECTION = "## Optimizer offload: device-side bytes per parameter (bench/bench_shard.py --offload)"


def _offload_rank(root: str, offload: str) -> dict:
    """One rank, bf16 weights (the single-accelerator fine-tuning case), optimizer_offload none or
    cpu: bytes per parameter on the device side (the model's weights and gradient buffers, and the
    optimizer's main weights and Adam state unless offloaded) and on the host side (what offload
    moves there: fp32 main weights, Adam's moments, the reduced gradients' host copy), after two steps."""
    import torch
    from megazoo.core.train import Trainer
    torch.set_num_threads(2)
    trainer = Trainer(_config(f"{root}/offload-{offload}", 1, "optimizer", "precision.dtype=bf16",
                              f"train.optimizer_offload={offload}"), monitor=False)
    for _ in range(2):
        trainer.train_step(trainer.train_data.step(trainer.consumed_samples))
    opt, buf = trainer.optimizer, trainer.optimizer.buffers
    held, state = buf.bytes_held(), opt.state_bytes()
    host_grads = 0 if getattr(opt, "host_grads", None) is None else opt.host_grads.numel() * opt.host_grads.element_size()
    numel = sum(p.numel() for p in buf.params)
    optimizer = state["main_params"] + state["optimizer_state"]
    device = held["weights"] + held["grads"] + (0 if offload == "cpu" else optimizer)
    host = (optimizer + host_grads) if offload == "cpu" else 0
    losses = trainer.train_step(trainer.train_data.step(trainer.consumed_samples))["loss"]
    trainer.close()
    return {"numel": numel, "weights": held["weights"] / numel, "grads": held["grads"] / numel,
            "device": device / numel, "host": host / numel, "third_loss": losses}


def offload_table(out: dict) -> str:
    rows = [f"| {name} | {r['weights']:.2f} | {r['grads']:.2f} | {r['device']:.2f} | {r['host']:.2f} | "
            f"{r['third_loss']:.6f} |" for name, r in out.items()]
    n = next(iter(out.values()))["numel"]
    return f"""{OFFLOAD_SECTION}

Issue 43, point 3. The model above ({n / 1e6:.0f}M parameters) on one rank, bf16 weights with fp32 main
weights (precision.dtype bf16), ZeRO-1 at dp 1, two steps then a third; generated data, a shared
2-core AMD EPYC, {time.strftime('%Y-%m-%d')}. Bytes per parameter measured from the tensors' storages (GradBuffers.bytes_held,
the optimizer's state_bytes and its host gradient copy). On this CPU-only machine "device" and "host"
are the same memory: the columns say which side of a GPU each tensor would be on (train.optimizer_offload
puts the fp32 main weights, Adam's moments and the update in host memory).

| train.optimizer_offload | weights | gradient buffers | device side | host side | third step's loss |
|---|---|---|---|---|---|
{chr(10).join(rows)}

The losses of the two runs are equal: the update is the same computation in host memory.
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dps", default="1,2,4")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--out", default="/tmp/megazoo-bench-shard")
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    ap.add_argument("--offload", action="store_true", help="only the optimizer offload table (its own section)")
    args = ap.parse_args(argv)
    os.environ.setdefault("MEGAZOO_PEAK_TFLOPS", "1")
    if args.offload:
        from megazoo.core.parallel.launch import spawn
        out = {mode: spawn(_offload_rank, 1, args.out, mode, timeout=1800)[0] for mode in ("none", "cpu")}
        text = offload_table(out)
        print(text)
        if args.write:
            sys.path.insert(0, os.path.dirname(__file__))
            from results import write_section
            write_section(OFFLOAD_SECTION, text)
        return 0
    load0 = os.getloadavg()[0]
    print(f"load average at start: {load0:.2f}", flush=True)
    mem = memory(args.out, [int(x) for x in args.dps.split(",")])
    spd = {} if args.no_speed else speed(args.out, args.steps)
    load1 = os.getloadavg()[0]
    print(f"load average at end: {load1:.2f}", flush=True)
    text = table(mem, spd, (load0, load1))
    print(text)
    if args.write:
        sys.path.insert(0, os.path.dirname(__file__))
        from results import write_section
        write_section(SECTION, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
