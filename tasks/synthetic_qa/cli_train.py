"""`megazoo task synthetic_qa train RECIPE [--set k=v ...] [--nproc N]`: `megazoo train RECIPE` for
the pipeline's three models: the QA model and the answer extractor (task synthetic_qa, kind qa or
answers; recipes synthetic_qa, synthetic_qa-answers) and the question generator (task sft; recipe
synthetic_qa-qg). Every layout, precision and resume feature is the trainer's; this stage only
refuses, before any rank starts, a recipe of another task.
"""

from __future__ import annotations

import argparse

PROG = "megazoo task synthetic_qa train"
TASKS = ("synthetic_qa", "sft")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.train.commands import add_recipe_arguments

    add_recipe_arguments(parser, "a YAML recipe path or a shipped recipe name (synthetic_qa, synthetic_qa-answers, "
                                 "synthetic_qa-qg)", "data.path=runs/synthetic_qa/kept.json parallel.tp=2")


def load_recipe(recipe, overrides=None):
    """RunConfig.load, then task.name checked (synthetic_qa when the recipe names none, or sft)."""
    from megazoo.core.train.commands import load_task_recipe

    return load_task_recipe(recipe, overrides, TASKS, "synthetic_qa", "the recipe's task.name is {name!r}; this stage "
                            "trains synthetic_qa models (task.name: synthetic_qa, kind qa|answers) and the question "
                            "generator (task.name: sft)")


def run(args) -> int:
    from functools import partial

    from megazoo.core.train.commands import run_recipe_command, train_here

    return run_recipe_command(args, PROG, load_recipe, partial(train_here, PROG))
