"""Issue #41 point 6: `-q/--quiet` and `-v/--verbose` on every command (core/verbosity.py), and the
experiment trackers `log.tensorboard` / `log.wandb` as extras, refused in one line when missing."""

import json
import os
import sys
import types

import pytest

from megazoo.cli import main
from megazoo.core.train.config import ConfigError, LogConfig
from megazoo.core.train.loggers import check_trackers
from megazoo.core.verbosity import ENV, NORMAL, QUIET, VERBOSE, level, shows_progress, split_flags, verbosity

TINY = ["train.steps=2", "train.global_batch=2", "train.micro_batch=2", "model.seq_length=16",
        "train.eval_iters=1", "log.plot=false", "checkpoint.save=false", "train.log_interval=1"]


@pytest.mark.parametrize("argv, rest, chosen", [
    (["-q", "zoo", "list"], ["zoo", "list"], QUIET),
    (["zoo", "list", "--quiet"], ["zoo", "list"], QUIET),
    (["train", "gpt-tiny", "-v"], ["train", "gpt-tiny"], VERBOSE),
    (["zoo", "list"], ["zoo", "list"], None),
    (["run", "--", "-q"], ["run", "--", "-q"], None),  # after `--` the words are someone else's
])
def test_split_flags(argv, rest, chosen):
    assert split_flags(argv) == (rest, chosen)


def test_split_flags_keeps_a_passthrough_tail_and_refuses_both():
    # `megazoo eval lm-eval run ... -v`: from the action on, lm-eval parses its own flags
    assert split_flags(["-q", "eval", "lm-eval", "run", "-v"], keep_after=3) == (["eval", "lm-eval", "run", "-v"], QUIET)
    with pytest.raises(ValueError, match="-q/--quiet and -v/--verbose together"):
        split_flags(["-q", "zoo", "-v"])


def test_both_flags_are_one_line_error(capsys):
    assert main(["-q", "zoo", "list", "-v"]) == 2
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and "give one of them" in err


def test_level_is_restored_after_a_command(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    with verbosity(QUIET):
        assert level() == QUIET and not shows_progress(True)
    assert ENV not in os.environ and level() == NORMAL and shows_progress(True)
    monkeypatch.setenv(ENV, "1")
    assert main(["-q", "zoo", "list"]) == 0
    assert os.environ[ENV] == "1"  # what the caller had is back


def _train(tmp_path, name, *flags, capsys):
    run = tmp_path / name
    assert main(["train", "gpt-tiny", *flags, "--set", *TINY, f"log.dir={run}"]) == 0
    out, err = capsys.readouterr()
    return run, out, err


def test_quiet_and_verbose_training(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(ENV, raising=False)
    _, out, err = _train(tmp_path, "normal", capsys=capsys)
    assert "train:" in err  # the progress bar
    assert "step 1/2:" not in err
    run, qout, qerr = _train(tmp_path, "quiet", "-q", capsys=capsys)
    assert "train:" not in qerr and "step 1/2:" not in qerr  # no bar, no information lines
    assert (run / "metrics.jsonl").is_file() and qout.strip()  # the results still come out
    _, vout, verr = _train(tmp_path, "verbose", "--verbose", capsys=capsys)
    lines = [ln for ln in verr.splitlines() if ln.startswith("step ")]
    assert [ln.split(":")[0] for ln in lines] == ["step 1/2", "step 2/2"]
    assert all("loss" in ln and "tokens/s" in ln and "MFU" in ln for ln in lines)


# --- trackers ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["tensorboard", "wandb"])
def test_missing_tracker_is_refused_naming_the_key(key, monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == key else real(name, *a))
    with pytest.raises(ConfigError, match=rf"log\.{key}=true needs the `{key}` package.*megazoo\[{key}\]"):
        check_trackers(LogConfig(**{key: True}))
    check_trackers(LogConfig())  # nothing asked, nothing needed
    assert main(["train", "gpt-tiny", "--set", f"log.{key}=true", "train.steps=1"]) == 2
    err = capsys.readouterr().err
    assert f"log.{key}=true" in err and "Traceback" not in err


def test_wandb_receives_config_scalars_and_finish(tmp_path, monkeypatch, capsys):
    calls = []

    class Run:
        def log(self, values, step):
            calls.append(("log", step, values))

        def finish(self):
            calls.append(("finish",))

    def init(**kwargs):
        calls.append(("init", kwargs))
        return Run()

    fake = types.ModuleType("wandb")
    fake.init = init
    fake.__spec__ = types.SimpleNamespace(name="wandb")  # find_spec answers for a module in sys.modules
    monkeypatch.setitem(sys.modules, "wandb", fake)
    assert main(["train", "gpt-tiny", "-q", "--set", *TINY, "log.wandb=true", "log.wandb_project=zoo-test",
                 f"log.dir={tmp_path / 'w'}"]) == 0
    init_kw = calls[0][1]
    assert calls[0][0] == "init" and init_kw["project"] == "zoo-test" and init_kw["name"] == "w"
    assert init_kw["config"]["train"]["steps"] == 2
    logged = [c for c in calls if c[0] == "log"]
    records = [json.loads(x) for x in (tmp_path / "w" / "metrics.jsonl").read_text().splitlines()]
    assert len(logged) == len(records) and logged[0][2]["train/loss"] == records[0]["loss"]
    assert calls[-1] == ("finish",)
