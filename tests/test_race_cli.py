"""`megazoo task ...` dispatch, the race stages' argument handling, and config errors."""

from pathlib import Path

import pytest

from megazoo.cli import main as megazoo
from megazoo.core.train.config import ConfigError
from megazoo.tasks.cli import available_tasks
from megazoo.tasks.race.config import RaceConfig

FIXTURE = Path(__file__).parent / "fixtures" / "race" / "RACE"


def test_tasks_are_found_by_package(capsys):
    assert "race" in available_tasks()
    assert megazoo(["task"]) == 2
    out = capsys.readouterr().out
    assert "race finetune" in out and "race evaluate" in out and "race ensemble" in out
    assert megazoo(["task", "rcae", "finetune"]) == 2
    assert "did you mean `race`" in capsys.readouterr().err
    assert megazoo(["task", "race", "evalute"]) == 2
    assert "did you mean `evaluate`" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # the stage's own --help
        megazoo(["task", "race", "evaluate", "--help"])
    assert "--checkpoint" in capsys.readouterr().out


def test_generate_command(tmp_path, capsys):
    out = tmp_path / "gen"
    assert megazoo(["task", "race", "generate", str(out), "--articles", "6", "--words", "40"]) == 0
    assert "train: middle" in capsys.readouterr().out
    assert len(list((out / "test" / "high").glob("*.txt"))) == 1
    assert megazoo(["task", "race", "generate", str(out)]) == 1  # never overwrites
    assert "exists and is not empty" in capsys.readouterr().err


def test_recipe_defaults_are_megatrons():
    cfg = RaceConfig.load("race")
    t = cfg.train
    assert (t.epochs, t.lr, t.warmup, t.weight_decay, t.micro_batch) == (3, 1e-5, 0.06, 0.1, 4)
    assert (cfg.data.max_seq_length, cfg.data.max_qa_length) == (512, 128)
    assert RaceConfig.load("race", ["train.lr=1e-4"]).train.lr == 1e-4


def test_config_errors():
    with pytest.raises(ConfigError, match="did you mean `train.epochs`"):
        RaceConfig.load("race", ["train.epochz=2"])
    with pytest.raises(ConfigError, match="train.micro_batch must be int"):
        RaceConfig.load("race", ["train.micro_batch=two"])
    cfg = RaceConfig.load("race", ["parallel.tp=2"])
    with pytest.raises(ConfigError, match="parallel.tp=2 must be >= 1 and divide the number of ranks \\(3\\)"):
        cfg.validate(3)
    cfg = RaceConfig.load("race", ["train.global_batch=6"])
    with pytest.raises(ConfigError, match="multiple of train.micro_batch x dp = 4 x 1"):
        cfg.validate(1)


def test_finetune_command_fails_early_on_bad_input(tmp_path, capsys):
    code = megazoo(["task", "race", "finetune", "race", "--set", "train.lr=fast"])
    assert code == 2 and "train.lr must be float" in capsys.readouterr().err
    code = megazoo(["task", "race", "finetune", "race", "--set", f"model.init={tmp_path / 'nothing'}",
                    f"data.path={FIXTURE}"])
    assert code == 1 and "no such checkpoint or Hugging Face folder" in capsys.readouterr().err
