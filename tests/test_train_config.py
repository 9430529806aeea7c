"""The run config and `megazoo train`'s command line: recipes, overrides, and one clear error per
bad input, raised before any rank starts."""

import os
import subprocess
import sys
import time

import pytest

from megazoo.core.train.cli import add_arguments
from megazoo.core.train.config import ConfigError, RunConfig, resolve_recipe


def test_recipe_resolves_by_name_with_or_without_yaml(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # shipped recipes resolve from any directory
    assert resolve_recipe("gpt-tiny") == resolve_recipe("gpt-tiny.yaml")
    cfg = RunConfig.load("gpt-125m")
    assert cfg.model["hidden_size"] == 768 and cfg.precision.dtype == "bf16" and cfg.recompute == "selective"
    cfg.validate(8)


def test_overrides_are_typed_and_repeatable():
    import argparse

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["gpt-tiny", "--set", "train.steps=8", "parallel.tp=2", "--set", "log.dir=out",
                              "train.lr=1e-3", "train.betas=[0.9,0.99]", "optim.distributed=true", "recompute=full"])
    cfg = RunConfig.load(args.recipe, [i for g in args.overrides for i in g])
    assert (cfg.train.steps, cfg.parallel.tp, cfg.log.dir) == (8, 2, "out")
    assert cfg.train.lr == 1e-3 and cfg.train.betas == [0.9, 0.99] and cfg.optim.distributed is True
    assert cfg.recompute == "full"
    builder = cfg.validate(2)
    assert builder.config.recompute == "full"  # the top-level key reaches the model config
    assert RunConfig.from_dict(cfg.to_dict()).to_dict() == cfg.to_dict()  # config.yaml round-trips


@pytest.mark.parametrize("override, message", [
    ("trian.steps=3", "unknown key `trian.steps`; did you mean `train.steps`?"),
    ("train.setps=3", "unknown key `train.setps`; did you mean `train.steps`?"),
    ("model.hiden_size=32", "unknown key `model.hiden_size`; did you mean `model.hidden_size`?"),
    ("train.steps=abc", "train.steps must be int, got 'abc' (str)"),
    ("parallel.sp=maybe", "parallel.sp must be bool, got 'maybe' (str)"),
    ("model.num_layers=2.5", "model.num_layers must be int, got 2.5 (float)"),
    ("precision.dtype=fp8", "precision.dtype must be one of fp32, bf16, fp16, auto, got 'fp8'"),
    ("recompute=some", "recompute must be one of none, selective, full, got 'some'"),
    ("model.arch=gtp", "model.arch='gtp' is not a known architecture; did you mean `gpt`?"),
    ("model.recompute=full", "set the top-level key `recompute`"),
])
def test_bad_overrides_name_the_problem(override, message):
    with pytest.raises(ConfigError) as e:
        RunConfig.load("gpt-tiny", [override]).validate(1)
    assert message in str(e.value)


def test_yaml_unknown_key_and_wrong_type(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model:\n  arch: gpt\ntrain:\n  global_bach: 8\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: unknown key `train.global_bach`; did you mean `train.global_batch`\?"):
        RunConfig.load(bad)
    bad.write_text("train:\n  steps: ten\n")
    with pytest.raises(ConfigError, match=r"train.steps must be int, got 'ten' \(str\)"):
        RunConfig.load(bad)
    with pytest.raises(ConfigError, match="neither a file nor a shipped recipe; did you mean `gpt-tiny`"):
        RunConfig.load("gpt-tinny")


def test_layout_errors():
    cfg = RunConfig.load("gpt-tiny", ["train.global_batch=12", "train.micro_batch=4"])
    with pytest.raises(ConfigError, match=r"train.global_batch=12 is not divisible by train.micro_batch x "
                                          r"data-parallel size = 4 x 2 = 8"):
        cfg.validate(2)
    cfg.validate(1)
    with pytest.raises(ConfigError, match="world size 3 is not divisible by tp x cp x pp"):
        RunConfig.load("gpt-tiny", ["parallel.tp=2"]).validate(3)
    with pytest.raises(ConfigError, match="model.num_layers=2: 2 layers cannot fill pp x vpp = 2 x 2 = 4 virtual stages"):
        RunConfig.load("gpt-tiny", ["parallel.pp=2", "parallel.vpp=2", "train.global_batch=16"]).validate(4)
    with pytest.raises(ConfigError, match="tensor parallelism tp=8 must divide num_heads=4"):
        RunConfig.load("gpt-tiny", ["parallel.tp=8"]).validate(8)


def _megazoo(*args, cwd):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, "-m", "megazoo", "train", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_cli_rejects_bad_config_before_starting_ranks(tmp_path):
    t = time.time()
    out = _megazoo("gpt-tiny", "--set", "train.global_batch=6", f"log.dir={tmp_path}/run", "--nproc", "2", cwd=tmp_path)
    assert out.returncode == 2
    assert "megazoo train: error: train.global_batch=6 is not divisible by train.micro_batch" in out.stderr
    assert not (tmp_path / "run").exists()  # nothing started, nothing written
    assert time.time() - t < 60
    out = _megazoo("gpt-tiny", "--set", "train.stesp=2", cwd=tmp_path)
    assert out.returncode == 2 and "did you mean `train.steps`?" in out.stderr


def test_numeric_strings_become_floats(tmp_path):
    """YAML 1.1 reads 1e-5 (no dot) as a string; float fields take it as the number, from --set
    and from a recipe file, and a real wrong type is still named."""
    cfg = RunConfig.load("gpt-tiny", ["train.lr=1e-5", "train.min_lr=1e-6", "train.eps=1E-8", "precision.min_scale=1"])
    assert (cfg.train.lr, cfg.train.min_lr, cfg.train.eps) == (1e-5, 1e-6, 1e-8)
    assert type(cfg.train.lr) is float and type(cfg.precision.min_scale) is float
    cfg.validate(1)
    recipe = tmp_path / "r.yaml"
    recipe.write_text("model: {arch: gpt}\ntrain:\n  lr: 1e-5\n  min_lr: 1e-6\n  steps: 1e1\n")
    cfg = RunConfig.load(str(recipe))
    assert (cfg.train.lr, cfg.train.min_lr, cfg.train.steps) == (1e-5, 1e-6, 10) and type(cfg.train.steps) is int
    for override, message in (("train.lr=abc", "--set: train.lr must be float, got 'abc' (str)"),
                              ("train.lr=nan", "--set: train.lr must be float, got 'nan' (str)"),
                              ("train.steps=1e-5", "--set: train.steps must be int, got '1e-5' (str)")):
        with pytest.raises(ConfigError) as e:
            RunConfig.load("gpt-tiny", [override])
        assert str(e.value) == message
