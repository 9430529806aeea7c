"""What every recipe-driven command shares (`megazoo train`, `megazoo task race train`, ...):
its arguments, loading and validating the recipe once, starting local ranks, and running the body
in a rank with the error reporting users see.

Kept apart from `megazoo train` (core/train/cli.py) so that any command, in core or in a task
package, builds on the same path without importing another command.
"""

from __future__ import annotations

import argparse
import os
import sys

from megazoo.core.argtypes import int_in
from megazoo.core.fs import input_arg

# --nproc: local ranks on one machine; more than this is no machine megazoo runs on (and each rank is
# a process with its own copy of the model)
MAX_NPROC = 1024


# the run directory of the recipe command running in this process (one process, or a rank under torchrun)
_RUN: dict = {}


def add_recipe_arguments(parser: argparse.ArgumentParser, recipe_help: str, set_example: str) -> None:
    """RECIPE, --set and --nproc: the arguments of every recipe-driven command."""
    # read, never written: its outputs (log.dir, checkpoint.dir) are checked when the config is
    # resolved (core/train/rundir.py check_outputs); a shipped recipe's name is no path and passes
    input_arg(parser, "recipe", kind="file", help=recipe_help)
    parser.add_argument("--set", dest="overrides", nargs="+", action="append", default=[], metavar="KEY=VALUE",
                        help=f"dotted overrides, e.g. --set {set_example} (repeatable)")
    parser.add_argument("--nproc", type=int_in(1, MAX_NPROC), default=None,
                        help=f"number of local ranks to start (1 to {MAX_NPROC})")


def run_recipe_command(args, prog: str, load, run_here) -> int:
    """Load and validate the recipe here (so a wrong key or layout fails before any rank starts),
    then run `run_here(cfg)` in this process (one process, or a rank under torchrun; the validated
    config object) or `run_here(cfg.to_dict())` on each of `--nproc` local ranks.
    `load(recipe, overrides)` returns a config with validate(world), to_dict() and run_dir();
    `run_here` must be a module-level function (ranks import it)."""
    from megazoo.core.parallel.launch import launch_local
    from megazoo.core.train.errors import ConfigError
    from megazoo.core.train.user_errors import debug, one_line

    overrides = [item for group in args.overrides for item in group]
    env_world = int(os.environ.get("WORLD_SIZE", "1"))
    under_launcher = "LOCAL_RANK" in os.environ and env_world > 1
    nproc = 1 if args.nproc is None else args.nproc
    if nproc < 1:  # argparse checks it (int_in); a caller may build args itself
        print(f"{prog}: error: --nproc must be >= 1, got {nproc}", file=sys.stderr)
        return 2
    try:
        cfg = load(args.recipe, overrides)
        cfg.validate(env_world if under_launcher else nproc)
    except ConfigError as e:
        if debug():
            raise  # MEGAZOO_DEBUG=1: the traceback behind the line (megazoo/cli.py lets it through)
        print(f"{prog}: error: {one_line(str(e))}", file=sys.stderr)
        return 2
    if under_launcher or nproc == 1:
        _RUN["dir"] = cfg.run_dir()  # named by run_in_rank on Ctrl-C, whichever command's run_here calls it
        return run_here(cfg)  # the validated config itself: this process does not validate it again
    return launch_local(_rank_entry, (run_here, cfg.to_dict()), nproc, prog, cfg.run_dir())


def load_task_recipe(recipe, overrides, tasks: tuple[str, ...], default: str | None, refusal: str):
    """RunConfig.load for a task's training stage, with the recipe's task.name checked: `default`
    when the recipe names no task (None: a task name is required), a name outside `tasks` refused
    before any rank starts with `refusal` (formatted with the recipe's `name` and `recipe`)."""
    from megazoo.core.train.config import ConfigError, RunConfig

    cfg = RunConfig.load(recipe, overrides)
    name = cfg.task.get("name")
    if name is None and default is not None:
        cfg.task["name"] = default
    elif name not in tasks:
        raise ConfigError(refusal.format(name=name, recipe=recipe))
    return cfg


def train_here(prog: str, cfg) -> int:
    """Train `cfg` in this process under `prog`'s name: the body of every training command
    (`megazoo train`, a task's finetune stage). `cfg` is the validated RunConfig in a single process,
    its dict on a launched rank. Bind `prog` with functools.partial to get a `run_here` that ranks
    can import: `run_recipe_command(args, PROG, load, partial(train_here, PROG))`."""
    from megazoo.core.train.config import RunConfig
    from megazoo.core.train.trainer import train

    if not isinstance(cfg, RunConfig):
        cfg = RunConfig.from_dict(cfg)
    return run_in_rank(prog, lambda rank: train(cfg), run_dir=cfg.run_dir())


def _rank_entry(job) -> int:
    """One rank of a local launch: run the job, turning a failure code into the rank's exit code."""
    run_here, cfg_dict = job
    code = run_here(cfg_dict)
    if code:
        raise SystemExit(code)
    return code


def run_in_rank(prog: str, body, errors: tuple = (), run_dir=None) -> int:
    """In this process (alone, or one rank started by a launcher): set up the rank, run
    body(rank) and return 0; a known error (core/train/user_errors.py, or one of `errors`) is
    reported from rank 0 as one line `prog: error: ...` and returns 1 (the run started, so it is a
    runtime failure: a full disk, a permission lost, a NaN), or 2 for a ValueError (ConfigError,
    CheckpointError, a reader's error: what the user gave is wrong, e.g. a run directory that holds
    another run or a damaged checkpoint) unless an OSError caused it; Ctrl-C returns 130 and names `run_dir`, where the partial run is. The
    `run_here` functions of recipe commands are built on it."""
    from megazoo.core.parallel.launch import setup_rank, teardown_rank
    from megazoo.core.train.user_errors import classify, debug, one_line, reveal_causes

    rank, world = setup_rank()
    try:
        body(rank)
    except KeyboardInterrupt:
        run_dir = run_dir if run_dir is not None else _RUN.get("dir")
        if rank == 0:
            where = f" The partial run is in {run_dir} (its last complete checkpoint, if any, resumes with " \
                    "checkpoint.resume=auto)" if run_dir is not None else ""
            print(f"\n{prog}: interrupted.{where}", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - known errors become one line; a bug keeps its traceback
        if debug():
            reveal_causes(e)
            raise  # MEGAZOO_DEBUG=1: every error with its traceback and the errors it was raised from
        known = classify(e)
        if known is None and not isinstance(e, errors):
            raise
        if rank == 0:
            print(f"{prog}: error: {known[1] if known else one_line(str(e))}", file=sys.stderr)
        return 2 if isinstance(e, ValueError) and not isinstance(e.__cause__, OSError) else 1
    finally:
        teardown_rank(world)
    return 0
