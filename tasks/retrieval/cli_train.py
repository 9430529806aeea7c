"""What `pretrain` and `finetune` share: `megazoo train RECIPE` for the retriever, with the
recipe's task checked (task.name retrieval; task.objective the stage's kind)."""

from __future__ import annotations

import argparse

KINDS = {"pretrain": ("ict",), "finetune": ("supervised",)}
DEFAULT = {"pretrain": "ict", "finetune": "supervised"}


def add_arguments(parser: argparse.ArgumentParser, default_recipe: str) -> None:
    from megazoo.core.train.commands import add_recipe_arguments

    add_recipe_arguments(parser, f"a YAML recipe path or a shipped recipe name ({default_recipe})",
                         "train.steps=100 parallel.dp=2")


def load_recipe(stage: str, recipe, overrides=None):
    """RunConfig.load, then task.name (retrieval) and task.objective (this stage's) checked or set."""
    from megazoo.core.train.config import ConfigError, RunConfig

    cfg = RunConfig.load(recipe, overrides)
    name = cfg.task.get("name")
    if name is None:
        cfg.task["name"] = "retrieval"
    elif name != "retrieval":
        raise ConfigError(f"the recipe's task.name is {name!r}, this stage trains the retriever (task.name: retrieval); "
                          f"run it with `megazoo train {recipe}`")
    objective = cfg.task.setdefault("objective", DEFAULT[stage])
    if objective not in KINDS[stage]:
        other = "finetune" if stage == "pretrain" else "pretrain"
        raise ConfigError(f"task.objective={objective!r} is not a {stage} objective ({', '.join(KINDS[stage])}); "
                          f"use `megazoo task retrieval {other}`")
    return cfg


def run_stage(stage: str, args) -> int:
    from functools import partial

    from megazoo.core.train.commands import run_recipe_command

    return run_recipe_command(args, f"megazoo task retrieval {stage}", partial(load_recipe, stage), run_here)


def run_here(cfg) -> int:
    """Train in this process, named after the stage the recipe's objective belongs to."""
    from megazoo.core.train.commands import train_here

    objective = (cfg.task if hasattr(cfg, "task") else cfg.get("task") or {}).get("objective")
    return train_here("megazoo task retrieval " + ("pretrain" if objective == "ict" else "finetune"), cfg)
