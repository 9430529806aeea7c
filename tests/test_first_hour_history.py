"""Issue #41 point 1: a rerun into an existing run folder never rewrites its history.

A changed training setting is refused in one line naming the key, old and new value; with
checkpoint.allow_changes=true it trains and config.yaml keeps the starting value plus a dated
history entry from the step the change began at; a rerun that trains nothing says so and leaves
the folder's files as they are; raising train.steps continues the run without the override."""

import json

import pytest
import yaml

from megazoo.cli import main
from megazoo.core.train import RunConfig

TINY = ["model.seq_length=32", "model.vocab_size=300", "train.global_batch=4", "train.micro_batch=2",
        "train.eval_iters=1", "train.warmup=1", "train.lr=1e-3", "train.min_lr=1e-4", "log.progress=false",
        "log.plot=false"]


@pytest.fixture(autouse=True)
def _known_peak(monkeypatch):
    monkeypatch.setenv("MEGAZOO_PEAK_TFLOPS", "1")  # no peak measurement: a second saved per run


def train(run, *overrides) -> int:
    return main(["train", "gpt-tiny", "--set", *TINY, f"log.dir={run}", *overrides])


def records(run) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def files(run) -> dict:
    return {name: (run / name).read_bytes() for name in ("config.yaml", "metrics.jsonl", "summary.txt")}


@pytest.fixture
def run(tmp_path, capsys):
    folder = tmp_path / "again"
    assert train(folder, "train.steps=3") == 0
    capsys.readouterr()
    return folder


def test_changed_lr_is_refused_naming_the_key(run, capsys):
    before = files(run)
    assert train(run, "train.steps=3", "train.lr=1e-2", "train.seed=7") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "train.lr 0.001 -> 0.01" in err and "train.seed 1234 -> 7" in err
    assert "checkpoint.allow_changes=true" in err and "train.steps" not in err
    assert files(run) == before  # nothing written: config.yaml still says what the weights saw


def test_override_trains_and_config_keeps_both_values(run, capsys):
    assert train(run, "train.steps=5", "train.lr=1e-2", "checkpoint.allow_changes=true") == 0
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert saved["train"]["lr"] == 1e-3 and saved["train"]["steps"] == 3  # the starting values stay
    (entry,) = saved["history"]
    assert entry["from_step"] == 4 and entry["date"][:2] == "20"
    assert entry["changes"] == {"train.steps": {"was": 3, "now": 5}, "train.lr": {"was": 1e-3, "now": 1e-2}}
    train_lr = {r["step"]: r["lr"] for r in records(run) if r.get("split") != "valid"}
    assert sorted(train_lr) == [1, 2, 3, 4, 5]
    assert max(train_lr[s] for s in (1, 2, 3)) <= 1e-3 < train_lr[4]  # the new lr took effect at step 4
    assert "resumed at step 3: 2 trained now" in capsys.readouterr().out
    # the same values again: nothing new to record, and the config as a recipe gives today's values
    assert train(run, "train.steps=6", "train.lr=1e-2") == 0
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert [e["changes"] for e in saved["history"]][1:] == [{"train.steps": {"was": 5, "now": 6}}]
    again = RunConfig.load(run / "config.yaml")
    assert again.train.lr == 1e-2 and again.train.steps == 6


def test_rerun_with_nothing_to_train_says_so_and_writes_nothing(run, capsys):
    before = files(run)
    assert train(run, "train.steps=3", "log.progress=true", "train.eval_iters=2") == 0  # run-control keys
    out = capsys.readouterr().out
    assert "nothing to train: the run is at step 3 of 3" in out
    assert "validation" not in out and "steps        " not in out  # no summary claiming steps ran
    assert files(run) == before  # no duplicate validation line, summary and config kept
    assert sum(r.get("split") == "valid" for r in records(run)) == 1


def test_raising_steps_continues_without_override(run):
    assert train(run, "train.steps=4") == 0
    assert [r["step"] for r in records(run) if r.get("split") != "valid"] == [1, 2, 3, 4]
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert [e["changes"] for e in saved["history"]] == [{"train.steps": {"was": 3, "now": 4}}]


def test_changed_model_shape_is_still_the_checkpoint_refusal(run, capsys):
    assert train(run, "train.steps=4", "model.hidden_size=32", "model.num_heads=2") == 2
    err = capsys.readouterr().err
    assert "hidden_size" in err and "allow_changes" not in err
