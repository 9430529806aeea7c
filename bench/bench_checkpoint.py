"""Checkpoint benchmark: megazoo's sharded save/load against a plain torch.save of the full state.

    python bench/bench_checkpoint.py [--nproc 2] [--hidden 384] [--layers 6] [--vocab 16000]
                                     [--repeats 3] [--write-results]

State: a GPT (learned positions, tied embeddings) at tp = nproc, with two fp32 Adam moments per
parameter, i.e. the model and optimizer state of training. megazoo: every rank writes its shards
(save_checkpoint: DCP files, fsync, checksums, meta.json, atomic commit) and reads them back at the
same layout (load_checkpoint, with checksum verification); the time training waits for an
asynchronous save (AsyncCheckpointer: the CPU snapshot) is also measured; and one process loads
the whole checkpoint at tp=1 (resharding). Peer: rank 0 torch.save's the full (gathered) state dict
into one file (with fsync) and torch.load's it (weights_only=True); the gather is not counted.
The median of --repeats runs counts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from results import write_section  # bench/results.py

SECTION = "## Checkpoint save/load (bench/bench_checkpoint.py)"


def _state(model, ctx, fill: bool):
    import torch

    from megazoo.core.checkpoint import Sharded, model_state, named_parameters, param_spec
    params = named_parameters(model)
    opt = {}
    for key in ("exp_avg", "exp_avg_sq"):
        opt[key] = {k: Sharded(p.detach() * 0.1 if fill else torch.zeros_like(p), param_spec(p, ctx))
                    for k, p in params.items()}
    return {"model": model_state(model, ctx), "optimizer": opt, "step": 1, "consumed_samples": 8}


def rank_fn(root: str, hidden: int, layers: int, vocab: int, repeats: int) -> dict:
    import torch
    import torch.distributed as dist

    from megazoo.core.checkpoint import AsyncCheckpointer, load_checkpoint, save_checkpoint
    from megazoo.core.parallel.context import ParallelConfig, ParallelContext
    from megazoo.core.parallel.gather import full_tensor
    from megazoo.zoo.gpt import GPTModel, gpt2_layout

    ctx = ParallelContext.build(ParallelConfig(tp=dist.get_world_size()))
    cfg = gpt2_layout(num_layers=layers, hidden_size=hidden, num_heads=max(1, hidden // 64), vocab_size=vocab,
                      seq_length=256)
    model = GPTModel(cfg, ctx).initialize(1)
    state = _state(model, ctx, True)
    root = Path(root)
    out = {"save": [], "load": [], "async_wait": [], "torch_save": [], "torch_load": []}
    saver = AsyncCheckpointer(ctx)
    for r in range(repeats):
        dist.barrier()
        t = time.perf_counter()
        path = save_checkpoint(root / "dcp", r + 1, state, ctx, {"arch": "gpt"}, keep=1)
        out["save"].append(time.perf_counter() - t)
        out["bytes"] = sum(p.stat().st_size for p in path.glob(f"__{ctx.rank}_*.distcp"))
        out["total_bytes"] = sum(p.stat().st_size for p in path.iterdir())
        template = _state(GPTModel(cfg, ctx), ctx, False)
        for p in template["model"].values():
            p.tensor.zero_()
        dist.barrier()
        t = time.perf_counter()
        load_checkpoint(path, template, ctx)
        out["load"].append(time.perf_counter() - t)
        assert all(torch.equal(a.tensor, b.tensor) for a, b in zip(template["model"].values(), state["model"].values()))
        dist.barrier()
        t = time.perf_counter()
        saver.save(root / "async", r + 1, state, {"arch": "gpt"}, keep=1)
        out["async_wait"].append(time.perf_counter() - t)
        saver.wait()
    saver.close()
    # the peer: the full state dict, gathered to rank 0, one torch.save / torch.load
    params = dict(model.named_parameters())
    full = {}
    for group in ("model",):
        full[group] = {k: full_tensor(s.tensor, params[k] if k in params else params["embed.weight"], ctx)
                       for k, s in state[group].items()}
    full["optimizer"] = {g: {k: full_tensor(s.tensor, params[k], ctx) for k, s in d.items()}
                         for g, d in state["optimizer"].items()}
    if ctx.rank == 0:
        for r in range(repeats):
            f = root / "full.pt"
            t = time.perf_counter()
            with open(f, "wb") as fh:
                torch.save(full, fh)
                fh.flush()
                os.fsync(fh.fileno())
            out["torch_save"].append(time.perf_counter() - t)
            t = time.perf_counter()
            torch.load(f, map_location="cpu", weights_only=True)
            out["torch_load"].append(time.perf_counter() - t)
            out["torch_bytes"] = f.stat().st_size
        out["params"] = sum(t.numel() for t in full["model"].values())
    dist.barrier()
    return out


def reshard_load(root: Path, hidden: int, layers: int, vocab: int, repeats: int) -> list[float]:
    """One process loads the whole checkpoint at tp=1."""
    import torch

    from megazoo.core.checkpoint import load_checkpoint
    from megazoo.core.parallel.context import ParallelContext
    from megazoo.zoo.gpt import GPTModel, gpt2_layout

    torch.set_num_threads(1)
    ctx = ParallelContext(device=torch.device("cpu"))
    cfg = gpt2_layout(num_layers=layers, hidden_size=hidden, num_heads=max(1, hidden // 64), vocab_size=vocab,
                      seq_length=256)
    times = []
    for _ in range(repeats):
        template = _state(GPTModel(cfg, ctx), ctx, False)
        t = time.perf_counter()
        load_checkpoint(root / "dcp", template, ctx)
        times.append(time.perf_counter() - t)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=384)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--vocab", type=int, default=16000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--write-results", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from megazoo.core.parallel.launch import spawn

    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        res = spawn(rank_fn, args.nproc, tmp, args.hidden, args.layers, args.vocab, args.repeats, timeout=1800)
        reshard = reshard_load(Path(tmp), args.hidden, args.layers, args.vocab, args.repeats)
    med = statistics.median
    save = max(med(r["save"]) for r in res)  # a collective save ends when the slowest rank does
    load = max(med(r["load"]) for r in res)
    wait = max(med(r["async_wait"]) for r in res)
    r0 = res[0]
    tsave, tload = med(r0["torch_save"]), med(r0["torch_load"])
    mib = 2 ** 20
    per_rank = ", ".join(f"{r['bytes'] / mib:.1f}" for r in res)
    lines = [
        SECTION, "",
        f"Peer: a plain `torch.save` of the full (gathered) state dict on rank 0 (with fsync) and `torch.load` "
        f"(weights_only). State: GPT {args.layers} layers, hidden {args.hidden}, vocab {args.vocab} "
        f"({r0['params'] / 1e6:.1f}M parameters) with two fp32 Adam moments, saved at tp={args.nproc} "
        f"({args.nproc} gloo ranks on CPU); median of {args.repeats}.",
        "",
        "| | megazoo (sharded, DCP) | torch.save, one rank | ratio |",
        "|---|---|---|---|",
        f"| save time (s) | {save:.2f} | {tsave:.2f} | {save / tsave:.2f}x |",
        f"| load time, same layout (s) | {load:.2f} | {tload:.2f} | {load / tload:.2f}x |",
        f"| load time, one process at tp=1 (resharded) (s) | {med(reshard):.2f} | {tload:.2f} | "
        f"{med(reshard) / tload:.2f}x |",
        f"| training blocked by an async save (s) | {wait:.2f} | {tsave:.2f} | {wait / tsave:.2f}x |",
        f"| bytes written per rank (MiB) | {per_rank} | {r0['torch_bytes'] / mib:.1f} (rank 0 only) | "
        f"{max(r['bytes'] for r in res) / r0['torch_bytes']:.2f}x (largest rank) |",
        f"| total on disk (MiB) | {r0['total_bytes'] / mib:.1f} | {r0['torch_bytes'] / mib:.1f} | "
        f"{r0['total_bytes'] / r0['torch_bytes']:.2f}x |",
        "",
        "megazoo's save includes fsync of every file, crc32 checksums, meta.json and the atomic commit; "
        "its load verifies every checksum first. The peer needs the whole state gathered on one rank "
        "(not counted) and cannot change layout. Replicated tensors (norms, biases) are written once. "
        "Timings taken on a shared 2-core machine under other jobs' load swing up to 2x between runs.",
        "",
        f"(bench/bench_checkpoint.py ran in {time.perf_counter() - start:.0f} s.)",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write_results:
        write_section(SECTION, text)


if __name__ == "__main__":
    main()
