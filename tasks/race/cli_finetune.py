"""`megazoo task race finetune RECIPE [--set k=v ...] [--nproc N]`.

The config is loaded and checked in this process, so a wrong key or layout fails before any rank
starts; `--nproc N` then starts N local ranks with torch.distributed's elastic launcher
(`torchrun -m megazoo task race finetune ...` works as well).
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.train.cli import add_recipe_arguments

    add_recipe_arguments(parser, "a YAML recipe path or a shipped recipe name (race)", "train.epochs=1 parallel.tp=2")


def run(args) -> int:
    from megazoo.core.train.cli import run_recipe_command
    from megazoo.tasks.race.config import RaceConfig

    return run_recipe_command(args, "megazoo task race finetune", RaceConfig.load, _run_here)


def _run_here(cfg_dict: dict) -> int:
    from megazoo.core.train.cli import run_in_rank
    from megazoo.tasks.race.config import RaceConfig
    from megazoo.tasks.race.run import run_finetune

    def body(rank: int) -> None:
        summary = run_finetune(RaceConfig.from_dict(cfg_dict))
        if rank == 0:
            print(f"[race] done: {summary['steps']} steps in {summary['elapsed_s']:.1f}s; checkpoint "
                  f"{summary['checkpoint']}", flush=True)

    # ValueError covers ReaderError, ConfigError and layout errors
    return run_in_rank("megazoo task race finetune", body)
