"""`megazoo config show`, `megazoo train --dry-run` and `megazoo completion` (issue #41 point 6)."""

import importlib
import shutil
import subprocess
import sys

import pytest
import yaml

from megazoo.cli import COMMANDS, main

TINY = ["train.steps=1", "train.global_batch=4", "train.micro_batch=2", "model.seq_length=16", "train.eval_iters=1",
        "log.progress=false", "log.plot=false", "checkpoint.save=false"]


def test_config_show_is_the_runs_config(tmp_path, capsys):
    run = tmp_path / "run"
    sets = [*TINY, "train.warmup_fraction=0.5", f"log.dir={run}"]
    assert main(["config", "show", "gpt-tiny", "--set", *sets]) == 0
    shown = yaml.safe_load(capsys.readouterr().out)
    out = subprocess.run([sys.executable, "-m", "megazoo", "train", "gpt-tiny", "--set", *sets], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    written = yaml.safe_load((run / "config.yaml").read_text())
    assert shown == written
    assert shown["model"]["ffn_hidden_size"] == 4 * shown["model"]["hidden_size"]  # resolved by the builder


def test_config_show_refuses_a_bad_key_as_train_does(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["config", "show", "gpt-tiny", "--set", "trian.steps=1"]) == 2
    shown = capsys.readouterr().err
    assert main(["train", "gpt-tiny", "--set", "trian.steps=1"]) == 2
    trained = capsys.readouterr().err
    assert shown.count("\n") == 1 and "did you mean `train.steps`" in shown
    assert shown.split("error:", 1)[1] == trained.split("error:", 1)[1]
    assert list(tmp_path.iterdir()) == []


def test_dry_run_prints_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = main(["train", "gpt-tiny", "--dry-run", "--set", *TINY, "train.micro_batch=3", "train.global_batch=6",
                 "model.seq_length=24"])
    out = capsys.readouterr().out
    assert code == 0
    assert list(tmp_path.iterdir()) == []  # no runs/ folder, no cache
    assert "first batch: input_ids [3, 24] int64" in out and "first batch: labels [3, 24]" in out
    assert "layout: world 1 = tp 1 x cp 1 x pp 1 x dp 1" in out and "2 micro-batches of 3" in out
    assert "memory per rank (planner" in out
    config = yaml.safe_load("\n".join(line for line in out.splitlines() if not line.startswith(("layout:", "memory",
                                                                                                 "first batch"))))
    assert config["model"]["seq_length"] == 24 and config["train"]["steps"] == 1


def test_dry_run_layout_of_ranks(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["train", "gpt-tiny", "--dry-run", "--nproc", "4", "--set", "parallel.tp=2", "parallel.pp=2"]) == 0
    out = capsys.readouterr().out
    assert "world 4 = tp 2 x cp 1 x pp 2 x dp 1" in out
    assert list(tmp_path.iterdir()) == []


def test_dry_run_of_a_task_recipe_plans_its_model(tmp_path, capsys, monkeypatch):
    # a task builder (sft over a GPT) has the planner's memory line of the model it wraps
    monkeypatch.chdir(tmp_path)
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"prompt": "hi", "response": "there"}\n' * 20)
    assert main(["train", "sft-tiny", "--dry-run", "--set", f"data.path={pairs}"]) == 0
    out = capsys.readouterr().out
    assert "memory per rank (planner" in out and "first batch: labels" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pairs.jsonl"]


def _complete(script, tmp_path, *words) -> list[str]:
    path = tmp_path / "megazoo.bash"
    path.write_text(script)
    words_ = " ".join(f"'{w}'" for w in words)
    out = subprocess.run(["bash", "-c", f'source "{path}"; COMP_WORDS=(megazoo {words_}); '
                                        f'COMP_CWORD={len(words)}; _megazoo; printf "%s\\n" "${{COMPREPLY[@]}}"'],
                         cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [w for w in out.stdout.splitlines() if w]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_completion(tmp_path, capsys):
    from megazoo.tasks.cli import available_tasks

    assert main(["completion", "bash"]) == 0
    script = capsys.readouterr().out
    assert _complete(script, tmp_path, "ta") == ["task"]
    assert set(_complete(script, tmp_path, "")) >= set(COMMANDS)
    tasks = available_tasks()
    assert _complete(script, tmp_path, "task", "") == tasks
    name = tasks[0]
    stages = list(importlib.import_module(f"megazoo.tasks.{name}.cli").STAGES)
    assert _complete(script, tmp_path, "task", name, "") == stages
    assert _complete(script, tmp_path, "completion", "z") == ["zsh"]
    assert _complete(script, tmp_path, "config", "") == ["show"]


def test_zsh_completion_wraps_the_bash_one(capsys):
    assert main(["completion", "zsh"]) == 0
    script = capsys.readouterr().out
    assert "bashcompinit" in script and "complete -o filenames -F _megazoo megazoo" in script
