"""`megazoo task retrieval reader RECIPE [--set k=v ...] [--nproc N]`: the extractive reader trained on fixed
retrieval (reader_builder.py on the core trainer)."""

from __future__ import annotations

from megazoo.tasks.retrieval import reader_cli


def add_arguments(parser) -> None:
    reader_cli.add_arguments(parser, "retrieval-reader")


def load_recipe(recipe, overrides=None):
    return reader_cli.load_recipe("reader", recipe, overrides)


def run(args) -> int:
    return reader_cli.run_stage("reader", args)
