"""What the `reader` and `e2e` stages share: the recipe (RunConfig.load, so --set works as for
training) with task.component checked or set to the stage's, and the run with one-line errors.
One process: reader_train.py is its own loop, not the core trainer."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser, default_recipe: str) -> None:
    parser.add_argument("recipe", help=f"a YAML recipe path or a shipped recipe name ({default_recipe})")
    parser.add_argument("--set", dest="overrides", nargs="+", action="append", default=[], metavar="KEY=VALUE",
                        help="dotted overrides, e.g. --set train.steps=20 task.top_k=4 (repeatable)")


def load_recipe(stage: str, recipe, overrides=None):
    from megazoo.core.train.config import ConfigError, RunConfig
    from megazoo.tasks.retrieval.reader_train import ReaderTask

    cfg = RunConfig.load(recipe, overrides)
    name = cfg.task.setdefault("name", "retrieval")
    if name != "retrieval":
        raise ConfigError(f"the recipe's task.name is {name!r}; this stage trains the retrieval reader")
    component = cfg.task.setdefault("component", stage)
    if component != stage:
        raise ConfigError(f"task.component={component!r} is not this stage's ({stage}); use `megazoo task retrieval "
                          f"{component}`")
    ReaderTask.from_dict(cfg.task)  # every key checked before anything loads
    return cfg


def run_stage(stage: str, args) -> int:
    from megazoo.tasks.retrieval.errors import KNOWN
    from megazoo.tasks.retrieval.reader_train import train_reader

    prog = f"megazoo task retrieval {stage}"
    overrides = [x for group in args.overrides for x in group]
    try:
        cfg = load_recipe(stage, args.recipe, overrides)
        record = train_reader(cfg)
    except KNOWN as e:
        lines = str(e).strip().splitlines() or [type(e).__name__]
        print(f"{prog}: error: {lines[0]}", file=sys.stderr)
        return 2
    m, k = record["metrics"], record["top_k"]
    print(f"{stage}: EM {m['em']:.2f} on {record['n']} questions (top-{k} answer recall {m[f'top{k}_recall']:.2f}); "
          f"written to {cfg.run_dir()}/reader.json")
    return 0
