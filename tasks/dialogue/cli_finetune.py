"""`megazoo task dialogue finetune RECIPE [--set k=v ...] [--nproc N]`: `megazoo train RECIPE` for dialogue.

The run is the core trainer's (every layout, precision, resume and logging feature); this stage only
makes sure the recipe is a dialogue one: a recipe without a task becomes `task.name: dialogue`, a recipe
of another task is refused before any rank starts. Shipped recipes: dialogue-actor (multi-actor, persona
reference), dialogue-knowledge (BM25 sentences of a document set in the prompt).
"""

from __future__ import annotations

import argparse

PROG = "megazoo task dialogue finetune"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.train.commands import add_recipe_arguments

    add_recipe_arguments(parser, "a YAML recipe path or a shipped recipe name (dialogue-actor, dialogue-knowledge)",
                         "data.path=runs/dialogue/data/actors train.init_from=runs/dialogue/smollm2")


def load_dialogue_recipe(recipe, overrides=None):
    from megazoo.core.train.commands import load_task_recipe

    return load_task_recipe(recipe, overrides, ("dialogue",), "dialogue", "the recipe's task.name is {name!r}, this "
                            "stage trains task dialogue; run it with `megazoo train {recipe}`")


def run(args) -> int:
    from functools import partial

    from megazoo.core.train.commands import run_recipe_command, train_here

    return run_recipe_command(args, PROG, load_dialogue_recipe, partial(train_here, PROG))
