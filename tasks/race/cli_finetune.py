"""`megazoo task race finetune RECIPE [--set k=v ...] [--nproc N]`: `megazoo train RECIPE` for RACE.

The run is the core trainer's (every layout, precision, resume, logging and MFU feature of
`megazoo train`); this stage only makes sure the recipe is a RACE one: a recipe without a task
becomes `task.name: race`, a recipe of another task is refused before any rank starts.
"""

from __future__ import annotations

import argparse

PROG = "megazoo task race finetune"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.train.commands import add_recipe_arguments

    add_recipe_arguments(parser, "a YAML recipe path or a shipped recipe name (race)", "train.epochs=1 parallel.tp=2")


def load_race_recipe(recipe, overrides=None):
    """RunConfig.load, then task.name checked (set to race when the recipe names no task)."""
    from megazoo.core.train.commands import load_task_recipe

    return load_task_recipe(recipe, overrides, ("race",), "race", "the recipe's task.name is {name!r}, this stage "
                            "fine-tunes RACE (task.name: race); run it with `megazoo train {recipe}`")


def run(args) -> int:
    from functools import partial

    from megazoo.core.train.commands import run_recipe_command, train_here

    return run_recipe_command(args, PROG, load_race_recipe, partial(train_here, PROG))
