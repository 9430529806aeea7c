"""The training stage of `megazoo task retrieval`: one `train` stage (a row of cli.py's STAGES, built
like every task's by core/train/stages.py) that trains whichever of the package's five models the
recipe asks for, and the one recipe loader. The run is `megazoo train RECIPE` on the core trainer
(every layout, precision, resume and logging feature); the recipe's task settings say what it trains:

    task.objective: ict          the bi-encoder, inverse cloze task (builder.py)        retrieval-ict
    task.objective: supervised   the bi-encoder, DPR-style supervision (the default)    retrieval-finetune
    task.component: reader       the span reader on fixed retrieval (reader/)           retrieval-reader
    task.component: e2e          the reader and the query tower end to end              retrieval-e2e
    task.component: mss          end to end on masked salient spans                     retrieval-mss

A reader recipe (task.component) also gets its record after training: reader/train.py writes
LOG_DIR/reader.json and its predictions through the task-evaluation kit.
"""

from __future__ import annotations

from dataclasses import dataclass

from megazoo.core.train.stages import RecipeStage

PROG = "megazoo task retrieval train"


@dataclass(frozen=True)
class Trained:
    """One of the five models the train stage trains, named by its value of `key`."""

    key: str  # the task.* setting that names it: objective (the retriever) or component (the reader)
    recipe: str  # its shipped recipe
    what: str


# the value of task.objective / task.component -> what a recipe with it trains
TRAINING = {
    "ict": Trained("objective", "retrieval-ict", "the bi-encoder, inverse cloze task"),
    "supervised": Trained("objective", "retrieval-finetune", "the bi-encoder, DPR-style supervision"),
    "reader": Trained("component", "retrieval-reader", "the span reader on fixed retrieval"),
    "e2e": Trained("component", "retrieval-e2e", "the reader and the query tower end to end"),
    "mss": Trained("component", "retrieval-mss", "end to end on masked salient spans"),
}
DEFAULT = "supervised"  # a recipe that names neither setting (the retriever builder's own default)
# the older stage names (ALIASES in cli.py) and the one model each trained: `pretrain` still refuses a
# recipe that trains something else, and a recipe that names nothing gets what the old name trained
OLD_NAMES = {"pretrain": "ict", "finetune": "supervised", "reader": "reader", "e2e": "e2e", "mss": "mss"}
REFUSAL = ("the recipe's task.name is {name!r}; this stage trains retrieval models (task.name: retrieval): the "
           "retriever (task.objective: ict|supervised) or the reader (task.component: reader|e2e|mss); run it with "
           "`megazoo task {name} train {recipe}` or `megazoo train {recipe}`")


def values_of(key: str) -> str:
    """The values of task.KEY that name a TRAINING row: "ict|supervised"."""
    return "|".join(value for value, row in TRAINING.items() if row.key == key)


def trains(task: dict, default: str = DEFAULT) -> str:
    """The TRAINING row a recipe's task section asks for; a ConfigError when it asks for none or two."""
    from megazoo.core.train.errors import ConfigError

    objective, component = task.get("objective"), task.get("component")
    if objective is not None and component is not None:
        raise ConfigError(f"task.objective={objective!r} and task.component={component!r}: a recipe trains the "
                          f"retriever (task.objective: {values_of('objective')}) or the reader (task.component: "
                          f"{values_of('component')}), not both; drop one of them")
    if component is not None:
        key, value = "component", component
    else:
        key, value = "objective", default if objective is None else objective
    if not isinstance(value, str) or value not in TRAINING or TRAINING[value].key != key:
        raise ConfigError(f"task.{key}={value!r}; choose one of {values_of(key).replace('|', ', ')}")
    return value


def load_recipe(recipe, overrides=None, alias: str | None = None):
    """RunConfig.load of a retrieval recipe: task.name checked (set to retrieval when the recipe names
    none), then what it trains (trains: task.objective set when the recipe leaves it out); a reader
    recipe also has every task.* key checked (reader/task.py) and needs train.init_from, so a wrong
    recipe fails before anything loads. `alias`: the older stage name typed (OLD_NAMES), whose model
    the recipe must train."""
    from megazoo.core.train.commands import load_task_recipe
    from megazoo.core.train.errors import ConfigError

    cfg = load_task_recipe(recipe, overrides, ("retrieval",), "retrieval", REFUSAL)
    for key in ("objective", "component"):  # null: not given, as load_task_recipe treats task.name
        if key in cfg.task and cfg.task[key] is None:
            del cfg.task[key]
    old = OLD_NAMES.get(alias)
    name = trains(cfg.task, default=old if old in ("ict", "supervised") else DEFAULT)
    if old is not None and name != old:
        raise ConfigError(f"`megazoo task retrieval {alias}` trains {TRAINING[old].what} ({TRAINING[old].recipe}), "
                          f"but the recipe trains {TRAINING[name].what} (task.{TRAINING[name].key}: {name}); run it "
                          f"with `megazoo task retrieval train {recipe}`")
    if TRAINING[name].key == "objective":
        cfg.task["objective"] = name
        return cfg
    from megazoo.tasks.retrieval.reader.task import ReaderTask

    ReaderTask.from_dict(cfg.task)
    if not cfg.train.init_from:
        raise ConfigError("the reader needs a BERT to start from: train.init_from")
    return cfg


def run_here(cfg) -> int:
    """Train `cfg` in this process (alone, or one rank: then `cfg` is its dict): a reader recipe
    through reader/train.py (the trainer, then the reader's record), the retriever on the trainer."""
    from megazoo.core.train.commands import train_here

    task = cfg["task"] if isinstance(cfg, dict) else cfg.task
    if task.get("component") is not None:
        from megazoo.tasks.retrieval.reader.train import run_reader

        return run_reader(cfg, PROG)
    return train_here(PROG, cfg)


class TrainStage(RecipeStage):
    """recipe_stage("retrieval") whose recipe picks one of TRAINING's five (load_recipe, run_here)."""

    def load(self, recipe, overrides=None):
        return load_recipe(recipe, overrides)

    def run(self, args) -> int:
        from functools import partial

        from megazoo.core.train.commands import run_recipe_command

        load = partial(load_recipe, alias=getattr(args, "alias", None))
        return run_recipe_command(args, self.prog, load, run_here)
