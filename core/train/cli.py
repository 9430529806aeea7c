"""`megazoo train RECIPE [--set k=v ...] [--nproc N] [--dry-run]`.

The config is loaded, overridden and validated for the requested world size in this process, so a
wrong key, type or layout fails before any rank starts. `--nproc N` then starts N local ranks with
torch.distributed's elastic launcher (the engine behind torchrun); `torchrun -m megazoo train ...`
works as well (each rank finds WORLD_SIZE in its environment). The steps every recipe command shares
are in core/train/commands.py. `--dry-run` shows what a run would be (resolved config, layout,
memory per rank from core/plan, the first micro-batch's shapes); it trains nothing and writes no run folder.
"""

from __future__ import annotations

import argparse
from functools import partial

# re-exported: task commands written before commands.py existed import them from here
from megazoo.core.train.commands import (  # noqa: F401
    _rank_entry,
    add_recipe_arguments,
    run_in_rank,
    run_recipe_command,
    train_here,
)

__all__ = ["add_arguments", "run", "launch", "load_validated", "resolved_dict", "dry_run", "_rank_entry",
           "add_recipe_arguments", "run_in_rank", "run_recipe_command"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_recipe_arguments(parser, "a YAML recipe path, or the name of a shipped recipe (e.g. gpt-tiny)",
                         "train.steps=20 parallel.tp=2")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the resolved config, the layout, memory per rank and the first batch's "
                             "shapes; train nothing, write no run folder")


def run(args) -> int:
    from megazoo.core.train.config import RunConfig

    if getattr(args, "dry_run", False):
        return dry_run(args, "megazoo train")
    return run_recipe_command(args, "megazoo train", RunConfig.load, _run_here)


def load_validated(args, prog: str):
    """(cfg, builder, world) of RECIPE + --set, validated for --nproc ranks (or torchrun's WORLD_SIZE)
    exactly as `megazoo train` validates it; a bad key or layout prints train's one line and gives
    the exit code 2 instead of the tuple."""
    import os
    import sys

    from megazoo.core.train.config import RunConfig
    from megazoo.core.train.errors import ConfigError
    from megazoo.core.train.user_errors import debug, one_line

    overrides = [item for group in args.overrides for item in group]
    world = int(os.environ.get("WORLD_SIZE", "1")) if getattr(args, "nproc", None) is None else args.nproc
    try:
        cfg = RunConfig.load(args.recipe, overrides)
        builder = cfg.validate(world)
    except ConfigError as e:
        if debug():
            raise
        print(f"{prog}: error: {one_line(str(e))}", file=sys.stderr)
        return 2
    return cfg, builder, world


def resolved_dict(cfg, builder) -> dict:
    """The config a run writes to its config.yaml: the model section as the builder resolved it,
    train.warmup from train.warmup_fraction when the step count is known before the data is read."""
    t = cfg.train
    if t.warmup_fraction and not t.epochs:
        t.warmup = int(t.warmup_fraction * t.steps)  # as the trainer does once the steps are known
    d = cfg.to_dict()
    d["model"] = builder.to_dict()
    return d


def dry_run(args, prog: str) -> int:
    """Print what `megazoo train` would do, without training and without writing a run folder."""
    loaded = load_validated(args, prog)
    if isinstance(loaded, int):
        return loaded
    cfg, builder, world = loaded
    import yaml

    from megazoo.core.parallel.device import pick_device
    from megazoo.core.train.data import build_sources
    from megazoo.core.train.precision_probe import settle
    from megazoo.core.train.trainer import derive_steps

    precision_line = settle(cfg, pick_device())[0]  # precision.dtype=auto: the dtype the run would pick

    train_source, _ = build_sources(cfg, builder)  # real data: its tokeniser caches, never the run folder
    if cfg.train.epochs:
        derive_steps(cfg, len(train_source))
    p = cfg.parallel
    dp = p.validate(world)
    print(f"# {prog} --dry-run: nothing is trained and no run folder is written (the run would go to {cfg.run_dir()})")
    print(yaml.safe_dump(resolved_dict(cfg, builder), sort_keys=False).rstrip())
    print(f"layout: world {world} = tp {p.tp} x cp {p.cp} x pp {p.pp} x dp {dp} (ep {p.ep}, vpp {p.vpp}, "
          f"sp {str(p.sp).lower()}); {cfg.micro_batches_per_step(dp)} micro-batches of {cfg.train.micro_batch} "
          f"per rank per step")
    if precision_line:
        print(precision_line)
    print(_memory_line(cfg, builder, world))
    for key, (shape, dtype) in _first_batch(cfg, builder, train_source, dp).items():
        print(f"first batch: {key} {list(shape)} {dtype}")
    return 0


def _memory_line(cfg, builder, world: int) -> str:
    """Memory per rank from the planner (core/plan) for this layout, or the parameter count per
    pipeline stage where the planner cannot describe the model."""
    from megazoo.core.plan import Layout, PlanError, plan, stage_params

    p, t = cfg.parallel, cfg.train
    try:
        shape = builder.shape()
    except NotImplementedError:
        return f"memory per rank: not available from the planner (model.arch has no plan shape); " \
               f"{builder.num_parameters():,} parameters in all"
    layout = Layout(gpus=world, tp=p.tp, pp=p.pp, cp=p.cp, ep=p.ep, vpp=p.vpp, micro_batch=t.micro_batch,
                    global_batch=t.global_batch, sp=p.sp, recompute=cfg.recompute,
                    distributed_optimizer=cfg.shard_mode() != "none", precision=cfg.precision.dtype,
                    shard=cfg.shard_mode(), shard_prefetch=p.shard_prefetch,
                    optimizer_offload=None if t.optimizer_offload == "none" else t.optimizer_offload)
    try:
        result = plan(shape, layout)
    except (PlanError, ValueError, KeyError) as e:
        try:
            counts = ", ".join(f"{stage_params(shape, layout, i):,}" for i in range(p.pp))
        except (PlanError, ValueError, KeyError):
            counts = f"{builder.num_parameters(p.tp):,} per tp rank in all stages"
        return f"memory per rank: not available from the planner ({e}); parameters per stage (one tp rank): {counts}"
    parts = ", ".join(f"{k} {v:.3f}" for k, v in result.memory_breakdown_gb.items())
    return (f"memory per rank (planner, as on a GPU, largest stage): {result.memory_gb_per_gpu:.3f} GiB ({parts}); "
            f"{result.params_per_gpu:,} parameters per rank, {result.params_total:,} in all")


def _first_batch(cfg, builder, source, dp: int) -> dict:
    """{key: (shape, dtype)} of data-parallel rank 0's first micro-batch, as the trainer cuts it."""
    from megazoo.core.parallel.cp_split import split_batch
    from megazoo.core.train.data import stack_samples

    collate = builder.collate or stack_samples
    samples = [source.get(i) for i in range(cfg.train.micro_batch)]
    batch = split_batch(collate(samples), cfg.parallel.cp, 0)
    return {k: (tuple(v.shape), str(v.dtype).replace("torch.", "")) for k, v in batch.items()}


# the body every rank runs (module level through functools.partial, so ranks can import it)
_run_here = partial(train_here, "megazoo train")


def launch(cfg, nproc: int) -> int:
    """Start `nproc` local ranks with torch.distributed's elastic launcher and train in each."""
    from megazoo.core.parallel.launch import launch_local

    return launch_local(_rank_entry, (_run_here, cfg.to_dict()), nproc, "megazoo train", cfg.run_dir())
