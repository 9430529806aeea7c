"""The retrieval package's stages: one `train` stage (a row of cli.py's table, tasks/retrieval/stages.py)
trains whichever of the five models its recipe names, with one recipe loader that sets or checks
task.name and task.objective / task.component; the old stage names are aliases of the shared verbs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from megazoo.cli import main as megazoo
from megazoo.core.train.config import ConfigError
from megazoo.tasks.retrieval.stages import TRAINING, load_recipe, trains

PACKAGE = Path(__file__).resolve().parents[1] / "tasks" / "retrieval"


def test_one_train_stage_row_and_the_old_names_as_aliases():
    from megazoo.core.train.stages import RecipeStage
    from megazoo.tasks.retrieval import cli

    assert list(cli.STAGES) == ["data", "train", "store", "embed", "index", "evaluate"]
    assert set(cli.EXTRAS) == {"store", "embed", "index"}
    row = cli.STAGES["train"]
    assert isinstance(row, RecipeStage) and row.prog == "megazoo task retrieval train"
    assert all(t.recipe in row.recipe for t in TRAINING.values())  # --help names every shipped recipe
    assert cli.ALIASES == {"generate": "data", "pretrain": "train", "finetune": "train", "reader": "train",
                           "e2e": "train", "mss": "train"}
    assert not any((PACKAGE / name).exists() for name in ("cli_pretrain.py", "cli_finetune.py", "cli_generate.py",
                                                           "reader/cli_reader.py", "reader/cli_e2e.py",
                                                           "reader/cli_mss.py"))


def test_one_recipe_loader_in_the_package():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [f"{path.relative_to(PACKAGE)}:{node.name}" for node in ast.walk(tree)
                  if isinstance(node, ast.FunctionDef) and "recipe" in node.name and node.name.startswith("load")]
    assert found == ["stages.py:load_recipe"]


@pytest.mark.parametrize("value", list(TRAINING))
def test_each_shipped_recipe_trains_its_row(value):
    row = TRAINING[value]
    cfg = load_recipe(row.recipe, ["train.init_from=x"])
    assert cfg.task["name"] == "retrieval" and cfg.task[row.key] == value and trains(cfg.task) == value


def test_a_recipe_that_names_nothing_trains_the_supervised_retriever():
    cfg = load_recipe("retrieval-finetune", ["task.name=null", "task.objective=null"])
    assert cfg.task["name"] == "retrieval" and cfg.task["objective"] == "supervised"
    cfg = load_recipe("retrieval-ict", ["task.component=null"])  # null: not given
    assert cfg.task["objective"] == "ict" and "component" not in cfg.task


def test_a_recipe_of_another_task_is_refused(tmp_path):
    recipe = tmp_path / "race.yaml"
    recipe.write_text("task:\n  name: race\n")
    with pytest.raises(ConfigError) as e:
        load_recipe(recipe)
    assert str(e.value) == (f"the recipe's task.name is 'race'; this stage trains retrieval models (task.name: "
                            f"retrieval): the retriever (task.objective: ict|supervised) or the reader (task.component: "
                            f"reader|e2e|mss); run it with `megazoo task race train {recipe}` or `megazoo train {recipe}`")


@pytest.mark.parametrize("recipe, extra, message", [
    ("retrieval-ict", "task.component=e2e", "task.objective='ict' and task.component='e2e': a recipe trains the "
                                            "retriever (task.objective: ict|supervised) or the reader (task.component: "
                                            "reader|e2e|mss), not both; drop one of them"),
    ("retrieval-ict", "task.objective=mss", "task.objective='mss'; choose one of ict, supervised"),
    ("retrieval-e2e", "task.component=dpr", "task.component='dpr'; choose one of reader, e2e, mss"),
    ("retrieval-reader", "train.init_from=null", "the reader needs a BERT to start from: train.init_from"),
])
def test_what_the_recipe_asks_for_is_checked(recipe, extra, message):
    with pytest.raises(ConfigError) as e:
        load_recipe(recipe, [extra])
    assert str(e.value) == message


def test_an_old_stage_name_runs_train_with_a_note(capsys):
    # the alias reaches the train stage (its recipe error, one line, after the dispatcher's note)
    assert megazoo(["task", "retrieval", "pretrain", "retrieval-ict", "--set", "task.component=e2e"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == "megazoo task retrieval: note: `pretrain` is now `train`"
    assert err[1].startswith("megazoo task retrieval train: error: task.objective='ict' and task.component='e2e'")


def test_an_old_stage_name_keeps_what_it_trained(capsys):
    # `pretrain` meant ICT: a recipe that names nothing gets it, a recipe of another model is refused
    cfg = load_recipe("retrieval-finetune", ["task.objective=null"], alias="pretrain")
    assert cfg.task["objective"] == "ict"
    assert load_recipe("retrieval-finetune", ["task.objective=null"]).task["objective"] == "supervised"
    with pytest.raises(ConfigError) as e:
        load_recipe("retrieval-finetune", alias="pretrain")
    assert str(e.value) == ("`megazoo task retrieval pretrain` trains the bi-encoder, inverse cloze task (retrieval-ict), "
                            "but the recipe trains the bi-encoder, DPR-style supervision (task.objective: supervised); "
                            "run it with `megazoo task retrieval train retrieval-finetune`")
    assert megazoo(["task", "retrieval", "e2e", "retrieval-reader", "--set", "train.init_from=x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[1].endswith("but the recipe trains the span reader on fixed retrieval (task.component: reader); run it "
                           "with `megazoo task retrieval train retrieval-reader`")
    assert load_recipe("retrieval-e2e", ["train.init_from=x"], alias="e2e").task["component"] == "e2e"
