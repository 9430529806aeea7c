"""`megazoo task retrieval e2e RECIPE [--set k=v ...] [--nproc N]`: the reader and the query encoder trained end to end
(individual top-k) (reader_builder.py on the core trainer)."""

from __future__ import annotations

from megazoo.tasks.retrieval import reader_cli


def add_arguments(parser) -> None:
    reader_cli.add_arguments(parser, "retrieval-e2e")


def load_recipe(recipe, overrides=None):
    return reader_cli.load_recipe("e2e", recipe, overrides)


def run(args) -> int:
    return reader_cli.run_stage("e2e", args)
