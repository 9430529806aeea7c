"""`megazoo task race finetune RECIPE [--set k=v ...] [--nproc N]`.

The config is loaded and checked in this process, so a wrong key or layout fails before any rank
starts; `--nproc N` then starts N local ranks with torch.distributed's elastic launcher
(`torchrun -m megazoo task race finetune ...` works as well).
"""

from __future__ import annotations

import argparse
import os
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("recipe", help="a YAML recipe path or a shipped recipe name (race)")
    parser.add_argument("--set", dest="overrides", nargs="+", action="append", default=[], metavar="KEY=VALUE",
                        help="dotted overrides, e.g. --set train.epochs=1 parallel.tp=2 (repeatable)")
    parser.add_argument("--nproc", type=int, default=None, help="number of local ranks to start")


def _error(msg: str) -> int:
    print(f"megazoo task race finetune: error: {msg}", file=sys.stderr)
    return 2


def run(args) -> int:
    from megazoo.core.train.config import ConfigError
    from megazoo.tasks.race.config import RaceConfig

    overrides = [item for group in args.overrides for item in group]
    env_world = int(os.environ.get("WORLD_SIZE", "1"))
    under_launcher = "LOCAL_RANK" in os.environ and env_world > 1
    nproc = args.nproc or 1
    if nproc < 1:
        return _error(f"--nproc must be >= 1, got {nproc}")
    try:
        cfg = RaceConfig.load(args.recipe, overrides)
        cfg.validate(env_world if under_launcher else nproc)
    except ConfigError as e:
        return _error(str(e))
    if under_launcher or nproc == 1:
        return _run_here(cfg.to_dict())
    return _launch(cfg.to_dict(), nproc, cfg.run_dir())


def _run_here(cfg_dict: dict) -> int:
    from megazoo.core.parallel.launch import setup_rank, teardown_rank
    from megazoo.tasks.race.config import RaceConfig
    from megazoo.tasks.race.run import run_finetune

    rank, world = setup_rank()
    try:
        summary = run_finetune(RaceConfig.from_dict(cfg_dict))
        if rank == 0:
            print(f"[race] done: {summary['steps']} steps in {summary['elapsed_s']:.1f}s; checkpoint "
                  f"{summary['checkpoint']}", flush=True)
    except (ValueError, FileNotFoundError) as e:  # ReaderError, ConfigError, layout errors
        if rank == 0:
            print(f"megazoo task race finetune: error: {e}", file=sys.stderr)
        return 1
    finally:
        teardown_rank(world)
    return 0


def _rank_entry(cfg_dict: dict) -> int:
    code = _run_here(cfg_dict)
    if code:
        raise SystemExit(code)
    return code


def _launch(cfg_dict: dict, nproc: int, run_dir) -> int:
    from megazoo.core.parallel.launch import launch_local

    return launch_local(_rank_entry, cfg_dict, nproc, "megazoo task race finetune", run_dir)
