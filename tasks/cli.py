"""`megazoo task NAME STAGE ...`: run a stage of a research task package.

Each task is a package `megazoo.tasks.NAME` whose `cli` module has a table STAGES: stage -> a row,
either (module, one-line help), where the module defines `add_arguments(parser)` and `run(args)` as
the top-level commands do, or an object with `help`, `add_arguments` and `run` (a training stage made
by core/train/stages.py `recipe_stage`). Stage verbs come from one vocabulary (VERBS) plus extras the
task documents in its EXTRAS table; ALIASES maps a stage's older name to its verb, so scripts written
for it keep working. Tasks are found by looking at the packages, so a new task plugs in without
editing this file.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import importlib.util
import pkgutil
import sys


# the verbs every task uses for the same kind of stage: write a data set in the official format,
# train on the core trainer, evaluate a checkpoint (FILE.json + predictions), sample text from a model
VERBS = {"data": "write a data set in the official format (generated offline, or converted)",
         "train": "train on the core trainer (a recipe, every layout)",
         "evaluate": "the paper's metrics of a checkpoint or generations: --out FILE.json and its predictions",
         "sample": "text sampled from a model"}


def stage_row(row) -> tuple[object, str]:
    """(the object with add_arguments and run, one-line help) of a STAGES row."""
    if isinstance(row, tuple):
        module_name, help_ = row
        return importlib.import_module(module_name), help_
    return row, row.help


def stage_help(row) -> str:
    return row[1] if isinstance(row, tuple) else row.help


def available_tasks() -> list[str]:
    import megazoo.tasks

    return sorted(m.name for m in pkgutil.iter_modules(megazoo.tasks.__path__)
                  if m.ispkg and importlib.util.find_spec(f"megazoo.tasks.{m.name}.cli") is not None)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", help="the task (e.g. race)")
    parser.add_argument("stage", nargs="?", help="the stage (e.g. finetune, evaluate, ensemble)")
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="the stage's own arguments (see its --help)")


def _fail(msg: str) -> int:
    print(f"megazoo task: error: {msg}", file=sys.stderr)
    return 2


def _listing(tasks: list[str]) -> str:
    lines = ["usage: megazoo task NAME STAGE [ARGS ...]", "", "tasks and stages:"]
    for name in tasks:
        stages = importlib.import_module(f"megazoo.tasks.{name}.cli").STAGES
        for stage, row in stages.items():
            lines.append(f"  {name} {stage:<10}  {stage_help(row)}")
    return "\n".join(lines)


def run(args) -> int:
    tasks = available_tasks()
    if args.name in (None, "-h", "--help"):
        print(_listing(tasks))
        return 0 if args.name else _fail("give a task and a stage, e.g. `megazoo task race train race`")
    if args.name not in tasks:
        close = difflib.get_close_matches(args.name, tasks, n=1)
        hint = f"; did you mean `{close[0]}`?" if close else ""
        return _fail(f"unknown task `{args.name}`{hint} (tasks: {', '.join(tasks) or 'none'})")
    cli = importlib.import_module(f"megazoo.tasks.{args.name}.cli")
    stages = cli.STAGES
    if args.stage is None and args.rest[:1] in (["-h"], ["--help"]):
        args.stage = args.rest[0]  # `megazoo task race --help`: argparse leaves the flag in REMAINDER
    if args.stage in (None, "-h", "--help"):
        print(f"usage: megazoo task {args.name} STAGE [ARGS ...]\n\nstages:")
        for stage, row in stages.items():
            print(f"  {stage:<10}  {stage_help(row)}")
        return 0 if args.stage else _fail(f"give a stage of task {args.name} ({', '.join(stages)})")
    aliases = getattr(cli, "ALIASES", {})
    typed = None  # the older name the user typed, when an alias
    if args.stage in aliases and aliases[args.stage] in stages:
        print(f"megazoo task {args.name}: note: `{args.stage}` is now `{aliases[args.stage]}`", file=sys.stderr)
        typed, args.stage = args.stage, aliases[args.stage]
    if args.stage not in stages:
        close = difflib.get_close_matches(args.stage, stages, n=1)
        hint = f"; did you mean `{close[0]}`?" if close else ""
        return _fail(f"task {args.name} has no stage `{args.stage}`{hint} (stages: {', '.join(stages)})")
    module, help_ = stage_row(stages[args.stage])
    parser = argparse.ArgumentParser(prog=f"megazoo task {args.name} {args.stage}", description=help_)
    module.add_arguments(parser)
    stage_args = parser.parse_args(args.rest)
    stage_args.alias = typed  # a stage that several old names became may check what the name meant
    from megazoo.core.fs import enforce

    enforce(parser, stage_args)  # the output policy (core/fs/policy.py), before the stage does anything
    return int(module.run(stage_args) or 0)
