"""What every recipe-driven command shares (`megazoo train`, `megazoo task race finetune`, ...):
its arguments, loading and validating the recipe once, starting local ranks, and running the body
in a rank with the error reporting users see.

Kept apart from `megazoo train` (core/train/cli.py) so that any command, in core or in a task
package, builds on the same path without importing another command.
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


def run_recipe_command(args, prog: str, load, run_here) -> int:
    """Load and validate the recipe here (so a wrong key or layout fails before any rank starts),
    then run `run_here(cfg)` in this process (one process, or a rank under torchrun; the validated
    config object) or `run_here(cfg.to_dict())` on each of `--nproc` local ranks.
    `load(recipe, overrides)` returns a config with validate(world), to_dict() and run_dir();
    `run_here` must be a module-level function (ranks import it)."""
    from megazoo.core.parallel.launch import launch_local
    from megazoo.core.train.errors import ConfigError

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
