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


def add_recipe_arguments(parser: argparse.ArgumentParser, recipe_help: str, set_example: str) -> None:
    """RECIPE, --set and --nproc: the arguments of every recipe-driven command."""
    parser.add_argument("recipe", help=recipe_help)
    parser.add_argument("--set", dest="overrides", nargs="+", action="append", default=[], metavar="KEY=VALUE",
                        help=f"dotted overrides, e.g. --set {set_example} (repeatable)")
    parser.add_argument("--nproc", type=int, default=None, help="number of local ranks to start")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_recipe_arguments(parser, "a YAML recipe path, or the name of a shipped recipe (e.g. gpt-tiny)",
                         "train.steps=20 parallel.tp=2")


def run_recipe_command(args, prog: str, load, run_here) -> int:
    """Load and validate the recipe here (so a wrong key or layout fails before any rank starts),
    then run `run_here(cfg)` in this process (one process, or a rank under torchrun; the validated
    config object) or `run_here(cfg.to_dict())` on each of `--nproc` local ranks. `load(recipe, overrides)` returns a config with validate(world),
    to_dict() and run_dir(); `run_here` must be a module-level function (ranks import it)."""
    from megazoo.core.parallel.launch import launch_local
    from megazoo.core.train.config import ConfigError

    overrides = [item for group in args.overrides for item in group]
    env_world = int(os.environ.get("WORLD_SIZE", "1"))
    under_launcher = "LOCAL_RANK" in os.environ and env_world > 1
    nproc = args.nproc or 1
    if nproc < 1:
        print(f"{prog}: error: --nproc must be >= 1, got {nproc}", file=sys.stderr)
        return 2
    try:
        cfg = load(args.recipe, overrides)
        cfg.validate(env_world if under_launcher else nproc)
    except ConfigError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    if under_launcher or nproc == 1:
        return run_here(cfg)  # the validated config itself: this process does not validate it again
    return launch_local(_rank_entry, (run_here, cfg.to_dict()), nproc, prog, cfg.run_dir())


def _rank_entry(job) -> int:
    """One rank of a local launch: run the job, turning a failure code into the rank's exit code."""
    run_here, cfg_dict = job
    code = run_here(cfg_dict)
    if code:
        raise SystemExit(code)
    return code


def run(args) -> int:
    from megazoo.core.train.config import RunConfig

    return run_recipe_command(args, "megazoo train", RunConfig.load, _run_here)


def run_in_rank(prog: str, body, errors: tuple = (ValueError, FileNotFoundError)) -> int:
    """In this process (alone, or one rank started by a launcher): set up the rank, run
    body(rank), report an expected error from rank 0 as `prog: error: ...` and return 1; 0 when
    the body succeeds. The `run_here` functions of recipe commands are built on it."""
    from megazoo.core.parallel.launch import setup_rank, teardown_rank

    rank, world = setup_rank()
    try:
        body(rank)
    except errors as e:
        if rank == 0:
            print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    finally:
        teardown_rank(world)
    return 0


def _run_here(cfg_dict: dict) -> int:
    """Run in this process: a single process (given the validated RunConfig), or one rank started
    by a launcher (given its dict)."""
    from megazoo.core.train.config import RunConfig
    from megazoo.core.train.trainer import TrainingStopped, train

    cfg = cfg_dict if isinstance(cfg_dict, RunConfig) else RunConfig.from_dict(cfg_dict)
    return run_in_rank("megazoo train", lambda rank: train(cfg), (TrainingStopped, ValueError, FileNotFoundError))


def launch(cfg, nproc: int) -> int:
    """Start `nproc` local ranks with torch.distributed's elastic launcher and train in each."""
    from megazoo.core.parallel.launch import launch_local

    return launch_local(_rank_entry, (_run_here, cfg.to_dict()), nproc, "megazoo train", cfg.run_dir())
