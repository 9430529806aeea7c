"""`megazoo train RECIPE [--set k=v ...] [--nproc N]`.

The config is loaded, overridden and validated for the requested world size in this process, so a
wrong key, type or layout fails before any rank starts. `--nproc N` then starts N local ranks with
torch.distributed's elastic launcher (the engine behind torchrun); `torchrun -m megazoo train ...`
works as well (each rank finds WORLD_SIZE in its environment).
"""

from __future__ import annotations

import argparse
import os
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("recipe", help="a YAML recipe path, or the name of a shipped recipe (e.g. gpt-tiny)")
    parser.add_argument("--set", dest="overrides", nargs="+", action="append", default=[], metavar="KEY=VALUE",
                        help="dotted overrides, e.g. --set train.steps=20 parallel.tp=2 (repeatable)")
    parser.add_argument("--nproc", type=int, default=None, help="number of local ranks to start")


def _error(msg: str) -> int:
    print(f"megazoo train: error: {msg}", file=sys.stderr)
    return 2


def run(args) -> int:
    from megazoo.core.train.config import ConfigError, RunConfig

    overrides = [item for group in args.overrides for item in group]
    env_world = int(os.environ.get("WORLD_SIZE", "1"))
    under_launcher = "LOCAL_RANK" in os.environ and env_world > 1
    nproc = args.nproc or 1
    if nproc < 1:
        return _error(f"--nproc must be >= 1, got {nproc}")
    try:
        cfg = RunConfig.load(args.recipe, overrides)
        cfg.validate(env_world if under_launcher else nproc)
    except ConfigError as e:
        return _error(str(e))
    if under_launcher or nproc == 1:
        return _run_here(cfg.to_dict())
    return launch(cfg, nproc)


def _run_here(cfg_dict: dict) -> int:
    """Run in this process: a single process, or one rank started by a launcher."""
    from megazoo.core.parallel.launch import setup_rank, teardown_rank
    from megazoo.core.train.config import RunConfig
    from megazoo.core.train.trainer import TrainingStopped, train

    rank, world = setup_rank()
    try:
        train(RunConfig.from_dict(cfg_dict))
    except (TrainingStopped, ValueError, FileNotFoundError) as e:
        if rank == 0:
            print(f"megazoo train: error: {e}", file=sys.stderr)
        return 1
    finally:
        teardown_rank(world)
    return 0


def _rank_entry(cfg_dict: dict) -> int:
    code = _run_here(cfg_dict)
    if code:
        raise SystemExit(code)
    return code


def launch(cfg, nproc: int) -> int:
    """Start `nproc` local ranks with torch.distributed's elastic launcher and train in each."""
    from megazoo.core.parallel.launch import launch_local

    return launch_local(_rank_entry, cfg.to_dict(), nproc, "megazoo train", cfg.run_dir())
