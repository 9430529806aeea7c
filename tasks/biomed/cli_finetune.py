"""`megazoo task biomed finetune RECIPE [--set k=v ...] [--nproc N]`: `megazoo train RECIPE` for biomed.

The run is the core trainer's; this stage only makes sure the recipe is a biomed one (a recipe
of another task is refused before any rank starts) and names its kind.
"""

from __future__ import annotations

import argparse

PROG = "megazoo task biomed finetune"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.train.commands import add_recipe_arguments

    add_recipe_arguments(parser, "a YAML recipe path or a shipped recipe name (biomed-ner, biomed-re, biomed-qa)",
                         "train.epochs=1 parallel.tp=2")


def load_biomed_recipe(recipe, overrides=None):
    """RunConfig.load, then task.name checked (biomed) and task.kind required."""
    from megazoo.core.train.commands import load_task_recipe

    return load_task_recipe(recipe, overrides, ("biomed",), None, "the recipe's task.name is {name!r}, this stage "
                            "fine-tunes biomed tasks (task.name: biomed, task.kind: ner|re|qa); start from biomed-ner, "
                            "biomed-re or biomed-qa")


def run(args) -> int:
    from functools import partial

    from megazoo.core.train.commands import run_recipe_command, train_here

    return run_recipe_command(args, PROG, load_biomed_recipe, partial(train_here, PROG))
