"""`megazoo task ...` dispatch, the race stages' argument handling (and their older names), the
shipped recipe, and the one-line errors of train and evaluate (no training here:
tests/test_race_finetune.py trains)."""

from pathlib import Path

import pytest

from megazoo.cli import main as megazoo
from megazoo.core.train.config import ConfigError, RunConfig
from megazoo.tasks.cli import available_tasks
from megazoo.tasks.race.cli import STAGES
from tests.test_race_finetune import make_tiny_bert

FIXTURE = Path(__file__).parent / "fixtures" / "race" / "RACE"


def test_tasks_are_found_by_package(capsys):
    assert "race" in available_tasks()
    assert megazoo(["task"]) == 2
    out = capsys.readouterr().out
    assert "race train" in out and "race data" in out and "race evaluate" in out and "race ensemble" in out
    assert megazoo(["task", "rcae", "train"]) == 2
    assert "did you mean `race`" in capsys.readouterr().err
    assert megazoo(["task", "race", "evalute"]) == 2
    assert "did you mean `evaluate`" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # the stage's own --help
        megazoo(["task", "race", "evaluate", "--help"])
    assert "--checkpoint" in capsys.readouterr().out


def test_data_command_and_its_older_name(tmp_path, capsys):
    out = tmp_path / "gen"
    assert megazoo(["task", "race", "data", str(out), "--articles", "6", "--words", "40"]) == 0
    assert "train: middle" in capsys.readouterr().out
    assert len(list((out / "test" / "high").glob("*.txt"))) == 1
    assert megazoo(["task", "race", "data", str(out)]) == 2  # never overwrites (a user's mistake: exit 2)
    assert "exists and is not empty" in capsys.readouterr().err
    assert megazoo(["task", "race", "generate", str(tmp_path / "old"), "--articles", "6", "--words", "40"]) == 0
    assert "`generate` is now `data`" in capsys.readouterr().err  # scripts of the older name keep working
    assert sorted(p.name for p in (tmp_path / "old").iterdir()) == sorted(p.name for p in out.iterdir())


def test_recipe_defaults_are_megatrons():
    cfg = RunConfig.load("race")
    t = cfg.train
    assert cfg.task["name"] == "race"
    assert (t.epochs, t.lr, t.warmup_fraction, t.weight_decay, t.decay) == (3, 1e-5, 0.06, 0.1, "linear")
    assert t.micro_batch == 4
    assert (cfg.task["max_seq_length"], cfg.task["max_qa_length"]) == (512, 128)
    assert cfg.checkpoint.best_metric == "accuracy"


def test_train_takes_race_recipes_only(tmp_path, capsys):
    # a recipe without a task becomes a RACE one (here: a GPT recipe, which RACE's builder refuses)
    assert STAGES["train"].load("gpt-tiny").task == {"name": "race"}
    assert megazoo(["task", "race", "train", "gpt-tiny"]) == 2
    assert "task race fine-tunes a BERT encoder, got model.arch='gpt'" in capsys.readouterr().err
    other = tmp_path / "squad.yaml"
    other.write_text("task:\n  name: squad\nmodel:\n  arch: bert\n")
    with pytest.raises(ConfigError, match="task.name is 'squad', this stage trains race"):
        STAGES["train"].load(str(other))
    for verb in ("train", "finetune"):  # finetune: the older name
        assert megazoo(["task", "race", verb, str(other)]) == 2
        err = capsys.readouterr().err
        assert "megazoo task race train: error:" in err and "squad" in err and "Traceback" not in err


def test_train_fails_early_on_bad_input(tmp_path, capsys):
    assert megazoo(["task", "race", "train", "race", "--set", "train.lr=fast"]) == 2
    assert "train.lr must be float" in capsys.readouterr().err
    assert megazoo(["task", "race", "train", "race", "--set", f"train.init_from={tmp_path / 'nothing'}",
                    f"data.path={FIXTURE}"]) == 2
    assert "no such folder" in capsys.readouterr().err
    bert = make_tiny_bert(tmp_path / "bert")
    assert megazoo(["task", "race", "train", "race", "--set", f"train.init_from={bert}",
                    "task.max_seq_lenght=64"]) == 2
    assert "did you mean `task.max_seq_length`" in capsys.readouterr().err
    assert megazoo(["task", "race", "train", "race", "--set", f"train.init_from={bert}", "parallel.tp=3"]) == 2
    assert "not divisible by tp x cp x pp = 3 x 1 x 1" in capsys.readouterr().err


def test_evaluate_errors_are_one_line(tmp_path, capsys):
    bert = make_tiny_bert(tmp_path / "bert")  # a training checkpoint, but of no task

    def evaluate(*args: str) -> str:
        assert megazoo(["task", "race", "evaluate", "--out", str(tmp_path / "out.json"), *args]) == 2
        err = capsys.readouterr().err
        assert err.startswith("megazoo task race evaluate: error:") and err.count("\n") == 1, err
        return err

    assert "not a race checkpoint (its task is None" in evaluate("--data", str(FIXTURE), "--checkpoint", bert)
    assert "no such RACE folder" in evaluate("--data", str(tmp_path / "nope"), "--checkpoint", bert)
    assert "does not exist" in evaluate("--data", str(FIXTURE), "--checkpoint", str(tmp_path / "nothing"))
    assert "no complete checkpoint" in evaluate("--data", str(FIXTURE), "--checkpoint", str(tmp_path))
    assert not (tmp_path / "out.json").exists()
