"""`megazoo task detox train RECIPE [--set k=v ...] [--nproc N]`: `megazoo train RECIPE` for SGEAT.

The run is the core trainer's (every layout, precision, resume and logging feature); this stage only
makes sure the recipe is a detox one: a recipe without a task becomes `task.name: detox`, a recipe of
another task is refused before any rank starts. Shipped recipes: detox (whole model), detox-adapter.
"""

from __future__ import annotations

import argparse

PROG = "megazoo task detox train"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.train.commands import add_recipe_arguments

    add_recipe_arguments(parser, "a YAML recipe path or a shipped recipe name (detox, detox-adapter)",
                         "data.path=runs/detox/kept train.init_from=runs/detox/smollm2")


def load_detox_recipe(recipe, overrides=None):
    """RunConfig.load, then task.name checked (set to detox when the recipe names no task)."""
    from megazoo.core.train.commands import load_task_recipe

    return load_task_recipe(recipe, overrides, ("detox",), "detox", "the recipe's task.name is {name!r}, this stage "
                            "trains task detox; run it with `megazoo train {recipe}`")


def run(args) -> int:
    from functools import partial

    from megazoo.core.train.commands import run_recipe_command, train_here

    return run_recipe_command(args, PROG, load_detox_recipe, partial(train_here, PROG))
