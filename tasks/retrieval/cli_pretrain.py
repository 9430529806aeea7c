"""`megazoo task retrieval pretrain RECIPE [--set k=v ...] [--nproc N]`: `megazoo train RECIPE` with the
retrieval task (task.objective ict); every layout, precision, resume and logging feature is the trainer's."""

from __future__ import annotations

from megazoo.tasks.retrieval import cli_train


def add_arguments(parser) -> None:
    cli_train.add_arguments(parser, "retrieval-ict")


def load_recipe(recipe, overrides=None):
    return cli_train.load_recipe("pretrain", recipe, overrides)


def run(args) -> int:
    return cli_train.run_stage("pretrain", args)
