"""`megazoo task retrieval mss RECIPE [--set k=v ...] [--nproc N]`: masked salient span pretraining: the reader finds masked
entities and dates in retrieved blocks, training the query tower (reader_builder.py on the core trainer, mss.py)."""

from __future__ import annotations

from megazoo.tasks.retrieval import reader_cli


def add_arguments(parser) -> None:
    reader_cli.add_arguments(parser, "retrieval-mss")


def load_recipe(recipe, overrides=None):
    return reader_cli.load_recipe("mss", recipe, overrides)


def run(args) -> int:
    return reader_cli.run_stage("mss", args)
