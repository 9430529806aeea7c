"""Training throughput: megazoo against transformers' GPT2LMHeadModel and Megatron-Core's GPTModel, on this CPU.

Model (all): 6 layers, hidden 768, 12 heads, vocabulary 32768, sequence 512, micro-batch 4,
AdamW, no dropout, tied embeddings. Every contender runs in its own fresh process (process-level
settings, such as megazoo's allocator policy, belong to the contender that makes them). The
contenders of one dtype are started together, each takes its warm-up step, and then they take turns
one timed step at a time (--steps each), so that load on a shared machine hits each alike; the
figures are the best step of each and the median over the turns of the ratio of neighbouring steps:
  - HF fp32 vs megazoo fp32 (2 threads each);
  - HF under bf16 autocast vs megazoo's bf16 policy (bf16 model, fp32 main params and grads), and
    megazoo bf16 with train.allocator=system (the C library's default), to show the policy's part;
  - megazoo TP=2 (2 ranks x 1 thread) vs TP=1 (1 rank x 2 threads, the fp32 contender), fp32;
  - Megatron-Core (the benchmark asset in requirements-assets.txt) GPTModel with its local layer spec,
    fp32, bf16 (Float16Module: the whole model in bf16, fp32 main params and torch AdamW, as its own
    optimizers need CUDA) and fp32 TP=2 over gloo (2 ranks x 1 thread), run on the CPU through
    bench/mcore_shim.py (its docstring lists every patch and why); megazoo / Megatron-Core is reported
    for fp32 TP=1, bf16 TP=1 and fp32 TP=2.
Each contender reports its step times, CPU time, minor page faults per step and peak resident memory.
Model FLOPs follow Megatron's formula (the same count for all); MFU divides by the dense GEMM
peak of the same dtype measured on this machine in the same run (fresh processes at the start and
the end, best), with 2 threads. bf16 is only judged on a CPU with native bf16 (AVX512-BF16/AMX).

    python bench/bench_train.py [--steps 5] [--write]   (--write updates bench/RESULTS.md)
    python bench/bench_train.py --compile        (adds megazoo bf16 with train.compile=true)
    python bench/bench_train.py --only fp32      (just the contenders whose name has "fp32"; not written)
    python bench/bench_train.py --smoke          (2 layers, seq 128: a quick check of the script; not written)

The load rule: the 1-minute load average is printed at the start and at the end, and --write is
refused (one line, exit code 2) when it is above LOAD_HEADROOM x cores at the start (nothing of the
bench runs yet: on 2 cores, above 1.0), or above the bench's own THREADS busy threads + LOAD_HEADROOM x
cores at the end (its last workers have just run 2 threads flat out: on 2 cores, above 3.0). A start
above the limit stops before any work; an end above it prints the figures but does not record them.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from importlib.metadata import version as package_version

import torch
from results import write_section as write_results_section  # bench/results.py

os.environ.setdefault("MEGAZOO_PEAK_TFLOPS", "1")  # the trainer's own peak is not used here

SIZES = dict(num_layers=6, hidden_size=768, num_heads=12, vocab_size=32768, seq_length=512)
MICRO = 4
THREADS = 2
SMOKE_SIZES = dict(num_layers=2, seq_length=128)
LOAD_HEADROOM = 0.5  # load average allowed beyond the bench's own threads, per core (the load rule)
if os.environ.get("MEGAZOO_BENCH_SMOKE"):  # set by --smoke for every process of the run, spawned ranks too
    SIZES.update(SMOKE_SIZES)


def mz_config(run_dir: str, dtype: str = "fp32", tp: int = 1, extra=()):
    from megazoo.core.train import RunConfig

    sets = [f"model.{k}={v}" for k, v in SIZES.items()] + [
        "model.arch=gpt", f"train.micro_batch={MICRO}", f"train.global_batch={MICRO}", "train.steps=1000",
        "data.synthetic=true", f"precision.dtype={dtype}", f"parallel.tp={tp}", "log.progress=false",
        "checkpoint.save=false", "checkpoint.resume=none", f"log.dir={run_dir}", "train.eval_iters=1", *extra]
    return RunConfig.load("gpt-tiny", sets)


class Megazoo:
    def __init__(self, dtype: str, run_dir: str, tp: int = 1, extra=()):
        from megazoo.core.train import Trainer

        self.trainer = Trainer(mz_config(run_dir, dtype, tp, extra), monitor=False)
        self.policy = self.trainer.allocator_policy

    def step(self) -> float:
        tr = self.trainer
        mbs = tr.train_data.step(tr.consumed_samples)
        t = time.perf_counter()
        tr.train_step(mbs)
        return time.perf_counter() - t

    def close(self) -> None:
        self.trainer.close()


class MegatronCore:
    """Megatron-Core's GPTModel with the local layer spec at SIZES, on the CPU through
    bench/mcore_shim.py, with the shim's training step (forward with labels, backward, gradient
    clipping at 1.0, AdamW lr 3e-4, weight decay 0.1) on a fixed batch of MICRO x seq ids."""

    def __init__(self, dtype: str, tp: int = 1):
        import mcore_shim  # bench/mcore_shim.py, beside this file

        self.shim = mcore_shim
        model = mcore_shim.build(SIZES, dtype, tp)
        g = torch.Generator().manual_seed(1)
        ids = torch.randint(0, SIZES["vocab_size"], (MICRO, SIZES["seq_length"]), generator=g)
        self.train_step = mcore_shim.Step(model, ids, bf16=dtype == "bf16")
        self.policy = "system"

    def step(self) -> float:
        t = time.perf_counter()
        self.train_step()
        return time.perf_counter() - t

    def close(self) -> None:
        self.shim.close()


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
        self.policy = "system"
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


def _tp2_serve_rank(kind: str, run_dir: str, commands, replies) -> None:
    """One rank of a TP=2 contender (kind "tp2": megazoo, "mcore-tp2": Megatron-Core): build, warm
    up, then one step per command that rank 0 reads and broadcasts; rank 0 replies with the step's
    time (the slower rank), CPU seconds and page faults (both ranks) and the larger resident size."""
    import torch.distributed as dist

    m = Megazoo("fp32", run_dir, tp=2) if kind == "tp2" else MegatronCore("fp32", tp=2)
    m.step()
    rank = dist.get_rank()
    if rank == 0:
        replies.put(m.policy)
    go = torch.zeros(1)
    while True:
        if rank == 0:
            go.fill_(1.0 if commands.get() == "step" else 0.0)
        dist.broadcast(go, 0)
        if go.item() == 0:
            break
        r = _measured_step(m)
        top = torch.tensor([r["time"], r["rss_gib"]], dtype=torch.float64)
        total = torch.tensor([r["cpu"], r["faults"]], dtype=torch.float64)
        dist.all_reduce(top, op=dist.ReduceOp.MAX)
        dist.all_reduce(total)
        if rank == 0:
            replies.put({"time": top[0].item(), "rss_gib": top[1].item(), "cpu": total[0].item(),
                         "faults": total[1].item()})
    m.close()


class TP2:
    """A TP=2 contender (`kind` as in _tp2_serve_rank) behind the same step() as the others: its two
    ranks run in spawned processes (a thread of this process waits on them) and take commands
    through queues."""

    def __init__(self, run_dir: str, kind: str = "tp2"):
        import multiprocessing as mp
        import threading

        from megazoo.core.parallel.launch import spawn

        ctx = mp.get_context("spawn")
        self.commands, self.replies = ctx.Queue(), ctx.Queue()
        self.failed: list[BaseException] = []

        def run():
            try:
                spawn(_tp2_serve_rank, 2, kind, run_dir, self.commands, self.replies, timeout=7200, threads=1)
            except BaseException as e:  # noqa: BLE001 - reported by the next step
                self.failed.append(e)
                self.replies.put(None)

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        self.policy = self._reply()

    def _reply(self):
        got = self.replies.get(timeout=3600)
        if got is None:
            raise RuntimeError(f"the TP=2 ranks failed: {self.failed[0]}")
        return got

    def step(self) -> dict:
        self.commands.put("step")
        return self._reply()

    def close(self) -> None:
        self.commands.put("stop")
        self.thread.join(timeout=600)


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
             "parameters excluded; the model in fp32). Without dropout, core attention takes the fast path: at these "
             "shapes on CPU the blocked explicit kernel, which keeps 10/16 of the s x s probabilities for backward "
             "(SDPA's flash kernel keeps none); attention dropout takes the full explicit path. Selective recompute "
             "drops what core attention keeps:", "",
             "| recompute | attention dropout | saved activations (MiB) | saving |", "|---|---:|---:|---:|", *rows, "",
             f"Distributed optimizer, bf16 model (4 layers, hidden 256, vocab 32768), dp={d}, measured per rank: "
             f"fp32 main params + Adam state = {zero[True]:.2f} bytes/param (12/d = {12 / d:.2f}); without it "
             f"{zero[False]:.2f} (12)."]
    return "\n".join(lines)


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _measured_step(contender) -> dict:
    """One timed step of this process's contender: seconds, CPU seconds, minor page faults, peak RSS."""
    f0, c0 = _faults(), time.process_time()
    t = contender.step()
    return {"time": t, "cpu": time.process_time() - c0, "faults": _faults() - f0, "rss_gib": _rss_gib()}


MCORE_TP2 = "Megatron-Core fp32 TP=2 (2 ranks x 1 thread)"
CONTENDERS = {  # name -> (kind, dtype, extra megazoo settings)
    "HF fp32": ("hf", "fp32", ()),
    "megazoo fp32": ("mz", "fp32", ()),
    "HF bf16 autocast": ("hf", "bf16", ()),
    "megazoo bf16": ("mz", "bf16", ()),
    "megazoo bf16, train.allocator=system": ("mz", "bf16", ("train.allocator=system",)),
    "megazoo fp32 TP=2 (2 ranks x 1 thread)": ("tp2", "fp32", ()),
    "Megatron-Core fp32": ("mcore", "fp32", ()),
    "Megatron-Core bf16": ("mcore", "bf16", ()),
    MCORE_TP2: ("mcore-tp2", "fp32", ()),
}
COMPILED = ("megazoo bf16, train.compile=true", ("mz", "bf16", ("train.compile=true",)))
GROUPS = ("fp32", "bf16")  # the contenders of one dtype are alive together and take turns


def worker(name: str, out: str) -> dict:
    """Run in a fresh process: the GEMM peak, the GEMM floor or the attention kernels."""
    from megazoo.core.train.flops import gemm_flops

    torch.set_num_threads(THREADS)
    if name == "peak":
        return {"fp32": max(gemm_flops(torch.float32, "cpu", THREADS, size=n, seconds=1.0) for n in (1024, 1536)),
                "bf16": max(gemm_flops(torch.bfloat16, "cpu", THREADS, size=n, seconds=1.0) for n in (1024, 1536))}
    if name == "attention":
        return attention_kernels()
    if name == "floor":
        return {k: gemm_floor(dt) for k, dt in (("fp32", torch.float32), ("bf16", torch.bfloat16))}
    raise ValueError(f"unknown worker {name!r}")


def serve(name: str, out: str) -> None:
    """Run in a fresh process: build one contender, take its warm-up step, say "ready", then take one
    timed step per "step" line on stdin and answer each with a JSON line; "stop" ends it."""
    torch.set_num_threads(THREADS)
    kind, dtype, extra = dict([COMPILED, *CONTENDERS.items()])[name]
    run_dir = f"{out}/{abs(hash(name))}"
    started = time.perf_counter()
    if kind in ("tp2", "mcore-tp2"):
        contender = TP2(run_dir, kind)
    elif kind == "hf":
        contender = HF(dtype == "bf16")
        contender.step()
    elif kind == "mcore":
        contender = MegatronCore(dtype)
        contender.step()
    else:
        contender = Megazoo(dtype, run_dir, extra=extra)
        contender.step()
    print(json.dumps({"setup_and_warmup_s": time.perf_counter() - started, "policy": contender.policy}), flush=True)
    for line in sys.stdin:
        if line.strip() != "step":
            break
        # TP2 measures in its ranks, where the work is
        print(json.dumps(contender.step() if isinstance(contender, TP2) else _measured_step(contender)), flush=True)
    if hasattr(contender, "close"):
        contender.close()


class Served:
    """A contender's serving process, seen from the benchmark: start it, step it, stop it."""

    def __init__(self, name: str, out: str):
        self.name = name
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve", name, "--out", out], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.ready = self._read()

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(timeout=60)
            raise RuntimeError(f"{self.name} failed:\n{self.proc.stderr.read()[-3000:]}")
        return json.loads(line)

    def step(self) -> dict:
        self.proc.stdin.write("step\n")
        self.proc.stdin.flush()
        return self._read()

    def stop(self) -> None:
        self.proc.stdin.write("stop\n")
        self.proc.stdin.close()
        self.proc.wait(timeout=600)


def gemm_floor(dtype: torch.dtype, repeats: int = 3) -> float:
    """Seconds a step's linear-layer GEMMs alone take: per layer QKV, attention output, MLP up and
    down, plus the output head, each forward (Y = X W^T), input gradient (dY W) and weight gradient
    (dY^T X), into preallocated outputs (no allocation or page faults), best of `repeats` each.
    Every implementation of this model has to compute these products, so no step can be shorter
    (attention's own products, norms, softmax, cross-entropy and the optimizer come on top)."""
    t, h, v = MICRO * SIZES["seq_length"], SIZES["hidden_size"], SIZES["vocab_size"]
    shapes = [(3 * h, h), (h, h), (4 * h, h), (h, 4 * h)] * SIZES["num_layers"] + [(v, h)]
    cache: dict[tuple, float] = {}
    for out_f, in_f in shapes:
        if (out_f, in_f) in cache:
            continue
        x, w, dy = torch.randn(t, in_f, dtype=dtype), torch.randn(out_f, in_f, dtype=dtype), torch.randn(t, out_f, dtype=dtype)
        y, dx, dw = torch.empty(t, out_f, dtype=dtype), torch.empty(t, in_f, dtype=dtype), torch.empty(out_f, in_f, dtype=dtype)
        total = 0.0
        for a, b, o in ((x, w.t(), y), (dy, w, dx), (dy.t(), x, dw)):
            torch.mm(a, b, out=o)  # warm-up
            best = float("inf")
            for _ in range(repeats):
                t0 = time.perf_counter()
                torch.mm(a, b, out=o)
                best = min(best, time.perf_counter() - t0)
            total += best
        cache[(out_f, in_f)] = total
    return sum(cache[s] for s in shapes)


def attention_kernels() -> dict:
    """Forward + backward of one layer's core attention at the bench shapes, each kernel, each dtype (ms)."""
    import torch.nn.functional as F

    from megazoo.core.nn.fast_attention import explicit_attention

    b, h, s, d = MICRO, SIZES["num_heads"], SIZES["seq_length"], SIZES["hidden_size"] // SIZES["num_heads"]
    out = {}
    for dtype in (torch.float32, torch.bfloat16):
        q, k, v = (torch.randn(b, h, s, d).to(dtype).requires_grad_() for _ in range(3))
        for name, fn in (("sdpa", lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)),
                         ("explicit", lambda: explicit_attention(q, k, v, d ** -0.5, True))):
            best = float("inf")
            for _ in range(4):
                t = time.perf_counter()
                fn().sum().backward()
                best = min(best, time.perf_counter() - t)
            out[f"{name} {str(dtype)[6:]}"] = 1e3 * best
    return out


def load_limits(cores: int) -> dict:
    """The highest 1-minute load average at which --write records figures (the module docstring's
    load rule): at the start nothing of the bench runs yet; at the end its own THREADS just ran."""
    return {"start": LOAD_HEADROOM * cores, "end": THREADS + LOAD_HEADROOM * cores}


def load_refusal(load: float, when: str, cores: int) -> str | None:
    """The one-line refusal of --write when `load` (1-minute load average at the `when` of the run,
    "start" or "end") is above its limit on `cores` cores; None when the machine is quiet enough."""
    limit = load_limits(cores)[when]
    if load <= limit:
        return None
    rule = f"{LOAD_HEADROOM:g} x cores"
    if when == "end":
        rule = f"the bench's own {THREADS} threads + {rule}"
    return (f"bench/bench_train.py: --write refused: the 1-minute load average at the {when} is {load:.2f}, above "
            f"{limit:.2f} ({rule}, {cores} cores), so the machine was busy and its figures are not recorded; "
            f"rerun when the machine is quiet, or without --write")


def run_worker(name: str, out: str) -> dict:
    cmd = [sys.executable, __file__, "--worker", name, "--out", out]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"{name} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None, loadavg=os.getloadavg) -> int:
    """The benchmark; `loadavg` (os.getloadavg by default) gives the load the load rule reads."""
    from megazoo.core.parallel.device import cpu_has_native_bf16
    from megazoo.core.parallel.device import cpu_facts

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=5,
                    help="timed steps per contender (after one warm-up), the contenders of a group taking turns step by step")
    ap.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    ap.add_argument("--compile", action="store_true", help="also megazoo bf16 with train.compile=true")
    ap.add_argument("--out", default="/tmp/megazoo-bench-train")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--serve", help=argparse.SUPPRESS)
    ap.add_argument("--smoke", action="store_true", help="2 layers, seq 128: a quick check of the script (not recorded)")
    ap.add_argument("--only", action="append", default=[], metavar="TEXT",
                    help="run only the contenders whose name contains TEXT (repeatable; e.g. fp32): a quick rerun of "
                         "some ratios, never written to RESULTS.md, without the memory section")
    args = ap.parse_args(argv)
    if args.smoke or os.environ.get("MEGAZOO_BENCH_SMOKE"):
        os.environ["MEGAZOO_BENCH_SMOKE"] = "1"  # the workers and their ranks too
        SIZES.update(SMOKE_SIZES)
        args.write = False
    if args.only:
        args.write = False
    if args.worker:
        print(json.dumps(worker(args.worker, args.out)))
        return 0
    if args.serve:
        serve(args.serve, args.out)
        return 0
    names = list(CONTENDERS) + ([COMPILED[0]] if args.compile else [])
    if args.only:
        names = [n for n in names if any(t in n for t in args.only)]
    if any(n.startswith("Megatron-Core") for n in names) and importlib.util.find_spec("megatron") is None:
        print("bench/bench_train.py: the Megatron-Core contenders need megatron-core, a benchmark asset: install it "
              "with `pip install -r requirements-assets.txt` (or leave them out with --only megazoo)", file=sys.stderr)
        return 2
    wall0, cpu0 = time.perf_counter(), _children_cpu()
    cores = os.cpu_count() or 1
    limits = load_limits(cores)
    load0 = loadavg()[0]
    print(f"load average (1 min) at the start: {load0:.2f} (--write needs <= {limits['start']:.2f})", flush=True)
    refusal = load_refusal(load0, "start", cores) if args.write else None
    if refusal:
        print(refusal, file=sys.stderr)
        return 2
    native = cpu_has_native_bf16()
    print(f"CPU native bf16 (AVX512-BF16/AMX): {'yes' if native else 'no'}", flush=True)
    flops = flops_per_step()
    tokens = MICRO * SIZES["seq_length"]
    peak = run_worker("peak", args.out)
    print(f"peak GEMM ({THREADS} threads): fp32 {peak['fp32'] / 1e12:.3f}, bf16 {peak['bf16'] / 1e12:.3f} TFLOP/s", flush=True)
    floor0 = run_worker("floor", args.out)
    print(f"the model's linear GEMMs alone, a step: fp32 {floor0['fp32']:.2f} s, bf16 {floor0['bf16']:.2f} s", flush=True)
    results: dict[str, dict] = {}
    for group in GROUPS:  # the contenders of a group live side by side and take turns, one step each
        served = [Served(n, args.out) for n in names if CONTENDERS.get(n, COMPILED[1])[1] == group]
        if not served:  # --only left none of this dtype
            continue
        steps = {c.name: [] for c in served}
        for i in range(args.steps):
            for c in served:
                steps[c.name].append(c.step())
            print(f"  step {i}: " + ", ".join(f"{n} {r[-1]['time']:.2f} s" for n, r in steps.items()), flush=True)
        for c in served:
            c.stop()
            r = steps[c.name]
            results[c.name] = {"times": [x["time"] for x in r], "cpu": statistics.median(x["cpu"] for x in r),
                               "faults": min(x["faults"] for x in r), "rss_gib": max(x["rss_gib"] for x in r),
                               "policy": c.ready["policy"], "setup_and_warmup_s": c.ready["setup_and_warmup_s"]}
    attention = run_worker("attention", args.out)
    end = run_worker("peak", args.out)  # again: load at the start can hide part of the peak
    peak = {k: max(peak[k], end[k]) for k in peak}
    floor = {k: min(v, floor0[k]) for k, v in run_worker("floor", args.out).items()}
    load1 = loadavg()[0]
    print(f"load average (1 min) at the end: {load1:.2f} (--write needs <= {limits['end']:.2f})", flush=True)

    rows = []
    for name in names:
        r = results[name]
        dt = min(r["times"])  # load only ever adds time
        p = peak["bf16" if "bf16" in name else "fp32"]
        rows.append((name, dt, tokens / dt, flops / dt / 1e12, flops / dt / p, r["faults"], r["cpu"], r["rss_gib"],
                     r["policy"]))
    by = {r[0]: r for r in rows}
    tps = lambda n: by[n][2]  # noqa: E731
    tp2 = "megazoo fp32 TP=2 (2 ranks x 1 thread)"
    # CPU seconds per step: less disturbed than wall time when other jobs share the cores
    cpu_ratio = lambda a, b: by[b][6] / by[a][6]  # noqa: E731

    def turns(a, b):  # speed of a over b in each turn (neighbouring steps), the median over the turns
        return statistics.median(tb / ta for ta, tb in zip(results[a]["times"], results[b]["times"]))
    wanted = [  # (label, the contenders it needs, value, target)
        ("megazoo fp32 / HF fp32", ("megazoo fp32", "HF fp32"), lambda: tps("megazoo fp32") / tps("HF fp32"), 1.3),
        ("megazoo bf16 / HF bf16 autocast", ("megazoo bf16", "HF bf16 autocast", native),
         lambda: tps("megazoo bf16") / tps("HF bf16 autocast"), 1.3),
        ("megazoo bf16 MFU vs bf16 GEMM peak", ("megazoo bf16", native), lambda: by["megazoo bf16"][4], 0.65),
        ("TP=2 / TP=1 (megazoo fp32)", (tp2, "megazoo fp32"), lambda: tps(tp2) / tps("megazoo fp32"), 0.9),
        ("megazoo fp32 / HF fp32, by CPU time per step", ("megazoo fp32", "HF fp32"),
         lambda: cpu_ratio("megazoo fp32", "HF fp32"), 1.3),
        ("megazoo bf16 / HF bf16 autocast, by CPU time per step", ("megazoo bf16", "HF bf16 autocast", native),
         lambda: cpu_ratio("megazoo bf16", "HF bf16 autocast"), 1.3),
        ("megazoo fp32 / HF fp32, median over turns", ("megazoo fp32", "HF fp32"),
         lambda: turns("megazoo fp32", "HF fp32"), 1.3),
        ("megazoo bf16 / HF bf16 autocast, median over turns", ("megazoo bf16", "HF bf16 autocast", native),
         lambda: turns("megazoo bf16", "HF bf16 autocast"), 1.3),
        ("TP=2 / TP=1 (megazoo fp32), median over turns", (tp2, "megazoo fp32"), lambda: turns(tp2, "megazoo fp32"), 0.9),
        ("megazoo fp32 / Megatron-Core fp32", ("megazoo fp32", "Megatron-Core fp32"),
         lambda: tps("megazoo fp32") / tps("Megatron-Core fp32"), 1.5),
        ("megazoo bf16 / Megatron-Core bf16", ("megazoo bf16", "Megatron-Core bf16", native),
         lambda: tps("megazoo bf16") / tps("Megatron-Core bf16"), 1.5),
        ("megazoo fp32 TP=2 / Megatron-Core fp32 TP=2", (tp2, MCORE_TP2), lambda: tps(tp2) / tps(MCORE_TP2), 1.3),
        ("megazoo fp32 / Megatron-Core fp32, median over turns", ("megazoo fp32", "Megatron-Core fp32"),
         lambda: turns("megazoo fp32", "Megatron-Core fp32"), 1.5),
        ("megazoo bf16 / Megatron-Core bf16, median over turns", ("megazoo bf16", "Megatron-Core bf16", native),
         lambda: turns("megazoo bf16", "Megatron-Core bf16"), 1.5),
        ("megazoo fp32 TP=2 / Megatron-Core fp32 TP=2, median over turns", (tp2, MCORE_TP2),
         lambda: turns(tp2, MCORE_TP2), 1.3)]
    # a ratio is shown when its contenders ran (--only) and, for bf16, the CPU has native bf16
    ratios = [(k, value(), g) for k, needs, value, g in wanted
              if all(n in by if isinstance(n, str) else n for n in needs)]
    lines = ["| contender | best step (s) | tokens/s | TFLOP/s | MFU | page faults/step | CPU s/step | peak RSS (GiB) | allocator |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    lines += [f"| {n} | {dt:.2f} | {t:,.0f} | {tf:.3f} | {100 * m:.1f}% | {f:,.0f} | {c:.2f} | {rss:.2f} | {pol} |"
              for n, dt, t, tf, m, f, c, rss, pol in rows]
    lines += ["", "| ratio | value | target | met |", "|---|---:|---:|---|"]
    lines += [f"| {k} | {v:.2f} | >= {g} | {'yes' if v >= g else 'NO'} |" for k, v, g in ratios]
    ceiling = [(dt, hf, mz) for dt, hf, mz in (("fp32", "HF fp32", "megazoo fp32"), ("bf16", "HF bf16 autocast", "megazoo bf16"))
               if hf in by and mz in by]
    if ceiling:
        lines += ["", "The ceiling: a step can be no shorter than the model's linear-layer GEMMs alone (`gemm_floor`: every "
                  "forward, input-gradient and weight-gradient product of QKV, attention output, MLP and output head, "
                  "into preallocated outputs, best of 3 each, fresh processes at the start and the end, best), so HF's "
                  "step over that time bounds the speed-up any implementation can show over HF here:", "",
                  "| dtype | linear GEMMs alone (s) | HF step (s) | megazoo step (s) | megazoo beyond the GEMMs (s) | "
                  "ceiling over HF | megazoo over HF |", "|---|---:|---:|---:|---:|---:|---:|"]
        lines += [f"| {dt} | {floor[dt]:.2f} | {by[hf][1]:.2f} | {by[mz][1]:.2f} | {by[mz][1] - floor[dt]:.2f} | "
                  f"{by[hf][1] / floor[dt]:.2f}x | {by[hf][1] / by[mz][1]:.2f}x |" for dt, hf, mz in ceiling]
    if any(n.startswith("Megatron-Core") for n in by):
        lines += ["", f"Megatron-Core {package_version('megatron-core')}: its `GPTModel` with `get_gpt_layer_local_spec()` "
                  "(torch LayerNorm, its column/row-parallel linears, `DotProductAttention` with the unfused torch "
                  "softmax, vocab-parallel cross-entropy; Megatron's fusion defaults, all off: they need CUDA, Apex or "
                  "Transformer Engine), tied embeddings, learned positions, tanh GELU as megazoo's GPT, a fixed batch; "
                  "on the CPU and gloo through `bench/mcore_shim.py` (its docstring lists the patches: a CPU RNG "
                  "tracker and a CPU buffer for the attention scores). Its optimizers need CUDA (literal `device='cuda'` "
                  "tensors), so it steps with torch AdamW: fp32 on its parameters; bf16 through its `Float16Module` "
                  "(the whole model in bf16) on fp32 main params and grads, as its Float16Optimizer does; gradient "
                  "norm by Megatron's rule over the TP group, clipped at 1.0."]
    if not native:
        lines += ["", "bf16 not judged: this CPU has no native bf16 (no AVX512-BF16/AMX); its bf16 GEMMs are emulated "
                  "and slower than fp32, so the bf16 rows above only show that the path runs."]
    att = ", ".join(f"{k} {v:.0f} ms" for k, v in attention.items())
    lines += ["", f"Core attention, one layer forward + backward at the bench shapes (fresh process): {att}. "
              "The explicit kernel splits causal queries into blocks of at least 128 rows, each seeing only the keys "
              "up to its last query. The kernel rule (megazoo.core.parallel.device.attention_kernel) takes it for bf16 "
              "on a CPU with native bf16, and for causal fp32 from 256 queries up to 1024 keys; SDPA otherwise."]
    if args.compile:
        lines += ["", f"train.compile=true: setup + compilation + warm-up {results[COMPILED[0]]['setup_and_warmup_s']:.0f} s "
                  f"(without: {results['megazoo bf16']['setup_and_warmup_s']:.0f} s)."]
    wall, cpu = time.perf_counter() - wall0, _children_cpu() - cpu0
    header = (f"Model: {SIZES['num_layers']} layers, hidden {SIZES['hidden_size']}, {SIZES['num_heads']} heads, vocab "
              f"{SIZES['vocab_size']}, seq {SIZES['seq_length']}, micro-batch {MICRO}, AdamW "
              f"({flops / 1e12:.3f} TFLOP per step, Megatron formula). CPU: {cpu_facts()[0]}, {os.cpu_count()} cores, "
              f"native bf16 "
              f"(AVX512-BF16/AMX): {'yes' if native else 'no'}; torch {torch.__version__}. Each contender in its own "
              f"fresh process, the contenders of a dtype alive together: one warm-up step each, then {args.steps} timed "
              f"steps each, taking turns step by step; best step per contender (load only adds time), and the median "
              f"over the turns of the step-time ratio; page faults: the fewest in a timed step; CPU s/step: the "
              f"median. Peak GEMM "
              f"measured in fresh processes at the start and the end, best ({THREADS} threads): fp32 "
              f"{peak['fp32'] / 1e12:.3f}, bf16 {peak['bf16'] / 1e12:.3f} TFLOP/s. Load average (1 min) {load0:.2f} at "
              f"the start, {load1:.2f} at the end, on {os.cpu_count()} cores (--write is refused above "
              f"{limits['start']:.1f} at the start, {limits['end']:.1f} at the end). The benchmark took "
              f"{wall:.0f} s wall, {cpu:.0f} s CPU. Run: `python bench/bench_train.py --write` "
              f"({time.strftime('%Y-%m-%d %H:%M')}).")
    text = header + "\n\n" + "\n".join(lines)
    if not args.smoke and not args.only:
        text += "\n\n" + memory_section(args.out)
    print(text)
    refusal = load_refusal(load1, "end", cores) if args.write else None
    if refusal:
        print(refusal, file=sys.stderr)
        return 2
    if args.write:
        write_section(text)
    return 0


def _children_cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


SECTION = "## Training throughput (bench/bench_train.py)"


def write_section(body: str) -> None:
    write_results_section(SECTION, SECTION + "\n\n" + body)


if __name__ == "__main__":
    sys.exit(main())
