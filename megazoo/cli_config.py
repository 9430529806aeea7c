"""`megazoo config show RECIPE [--set k=v ...] [--nproc N]`: the fully resolved config a
`megazoo train RECIPE --set ...` would use, as YAML, without training.

It loads and validates the recipe through the trainer's own path (core/train/cli.py load_validated),
so a bad key or layout gives train's one-line error, and prints what the run would write to its
config.yaml (the model section as the model builder resolves it).
"""

from __future__ import annotations

import argparse

# the actions of `megazoo config` (shell completion offers them)
ACTIONS = ("show",)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.train.commands import add_recipe_arguments

    parser.add_argument("action", choices=ACTIONS, help="show: print the resolved config of RECIPE")
    add_recipe_arguments(parser, "a YAML recipe path, or the name of a shipped recipe (e.g. gpt-tiny)",
                         "train.steps=20 parallel.tp=2")


def run(args) -> int:
    import yaml

    from megazoo.core.train.cli import load_validated, resolved_dict

    loaded = load_validated(args, f"megazoo config {args.action}")
    if isinstance(loaded, int):
        return loaded
    cfg, builder, _ = loaded
    print(yaml.safe_dump(resolved_dict(cfg, builder), sort_keys=False), end="")
    return 0
