"""`megazoo task story train RECIPE [--set task.component=keywords|ranker|generator ...] [--nproc N]`:
`megazoo train RECIPE` for MEGATRON-CNTRL's components (the core trainer's run: every layout,
precision, resume and logging feature). A recipe without a task becomes `task.name: story`; a recipe
of another task is refused before any rank starts. Shipped recipes: story (the generator),
story-keywords, story-ranker.
"""

from __future__ import annotations

import argparse

PROG = "megazoo task story train"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.train.commands import add_recipe_arguments

    add_recipe_arguments(parser, "a YAML recipe path or a shipped recipe name (story, story-keywords, story-ranker)",
                         "task.component=keywords train.steps=20")


def load_story_recipe(recipe, overrides=None):
    from megazoo.core.train.commands import load_task_recipe

    return load_task_recipe(recipe, overrides, ("story",), "story", "the recipe's task.name is {name!r}, this stage "
                            "trains task story; run it with `megazoo train {recipe}`")


def run(args) -> int:
    from functools import partial

    from megazoo.core.train.commands import run_recipe_command, train_here

    return run_recipe_command(args, PROG, load_story_recipe, partial(train_here, PROG))
