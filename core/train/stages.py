"""A task's training stage as one table row: `recipe_stage("race", help)` is `megazoo train RECIPE`
with the recipe's task checked, so `tasks/NAME/cli.py` writes

    STAGES = {"train": recipe_stage("race", "fine-tune BERT with the multiple-choice head"), ...}

instead of a module per stage. The run is the core trainer's (every layout, precision, resume and
logging feature of `megazoo train`); the stage only makes sure the recipe is one of this task's: a
recipe without a task becomes `task.name: NAME`, a recipe of another task is refused before any rank
starts. A task whose stages train different parts of one model (retrieval's ICT and DPR, story's
three components) names the setting that tells them apart: `choice=("objective", ("ict",))`.

Core knows no task: the row is plain data (names and strings), run through core/train/commands.py.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from functools import partial


@dataclass(frozen=True)
class RecipeStage:
    """One training stage of a task: `megazoo task TASK VERB RECIPE [--set k=v ...] [--nproc N]`."""

    task: str
    help: str
    verb: str = "train"
    recipe: str = ""  # the shipped recipe named in --help (default: the task's name)
    set_example: str = "train.steps=100 parallel.dp=2"
    choice_key: str | None = None  # a task.* setting this stage owns (e.g. "objective")
    choices: tuple[str, ...] = ()  # its allowed values; the first is set when the recipe gives none
    other_stage: str | None = None  # the stage to use instead when the setting belongs elsewhere

    @property
    def prog(self) -> str:
        return f"megazoo task {self.task} {self.verb}"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        from megazoo.core.train.commands import add_recipe_arguments

        add_recipe_arguments(parser, f"a YAML recipe path or a shipped recipe name ({self.recipe or self.task})",
                             self.set_example)

    def load(self, recipe, overrides=None):
        """RunConfig.load, then task.name checked (set to this task when the recipe names none) and
        the stage's own setting checked or set."""
        from megazoo.core.train.commands import load_task_recipe
        from megazoo.core.train.errors import ConfigError

        cfg = load_task_recipe(recipe, overrides, (self.task,), self.task,
                               f"the recipe's task.name is {{name!r}}, this stage trains {self.task} (task.name: "
                               f"{self.task}); run it with `megazoo task {{name}} train {{recipe}}` or "
                               f"`megazoo train {{recipe}}`")
        if self.choice_key:
            value = cfg.task.setdefault(self.choice_key, self.choices[0])
            if value not in self.choices:
                where = f"; use `megazoo task {self.task} {self.other_stage}`" if self.other_stage else ""
                raise ConfigError(f"task.{self.choice_key}={value!r} is not trained by this stage (it trains "
                                  f"{', '.join(self.choices)}){where}")
        return cfg

    def run(self, args) -> int:
        from megazoo.core.train.commands import run_recipe_command, train_here

        return run_recipe_command(args, self.prog, self.load, partial(train_here, self.prog))


def recipe_stage(task: str, help: str, **options) -> RecipeStage:
    """The training stage of `task` as a STAGES row (see RecipeStage for the options)."""
    return RecipeStage(task, help, **options)
