"""`megazoo train RECIPE [--set k=v ...] [--nproc N]`.

The config is loaded, overridden and validated for the requested world size in this process, so a
wrong key, type or layout fails before any rank starts. `--nproc N` then starts N local ranks with
torch.distributed's elastic launcher (the engine behind torchrun); `torchrun -m megazoo train ...`
works as well (each rank finds WORLD_SIZE in its environment). The steps every recipe command shares
are in core/train/commands.py.
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

__all__ = ["add_arguments", "run", "launch", "_rank_entry", "add_recipe_arguments", "run_in_rank", "run_recipe_command"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_recipe_arguments(parser, "a YAML recipe path, or the name of a shipped recipe (e.g. gpt-tiny)",
                         "train.steps=20 parallel.tp=2")


def run(args) -> int:
    from megazoo.core.train.config import RunConfig

    return run_recipe_command(args, "megazoo train", RunConfig.load, _run_here)


# the body every rank runs (module level through functools.partial, so ranks can import it)
_run_here = partial(train_here, "megazoo train")


def launch(cfg, nproc: int) -> int:
    """Start `nproc` local ranks with torch.distributed's elastic launcher and train in each."""
    from megazoo.core.parallel.launch import launch_local

    return launch_local(_rank_entry, (_run_here, cfg.to_dict()), nproc, "megazoo train", cfg.run_dir())
