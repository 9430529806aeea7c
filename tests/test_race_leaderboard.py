"""RACE registered with the leaderboard: one suite ranks a RACE fine-tuned checkpoint (an encoder
with its choice head), a plain encoder and a language model across RACE, GPT-3's zero-shot RACE
(`race_gpt3`, what a language model gets) and a zero-shot task."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from megazoo.core.train import RunConfig, Trainer
from megazoo.eval.leaderboard import markdown, run_leaderboard
from tests.test_eval_leaderboard import _tiny_hf_gpt2
from tests.test_task_framework import make_bert

RACE = Path(__file__).parent / "fixtures" / "race" / "RACE"


def test_leaderboard_runs_race_beside_zero_shot_tasks(tmp_path, capsys):
    from megazoo.cli import main
    from megazoo.eval.corpus_tasks import corpus_task_files
    from megazoo.tasks.race.evaluate_stage import evaluate_checkpoint

    bert = make_bert(tmp_path / "bert")
    cfg = RunConfig.load("race", [f"train.init_from={bert}", f"data.path={RACE}", "task.max_seq_length=64",
                                  "task.max_qa_length=24", "train.micro_batch=1", "train.global_batch=2",
                                  "train.epochs=0", "train.steps=2", "log.progress=false", "log.plot=false",
                                  "checkpoint.resume=none", f"log.dir={tmp_path / 'run'}"])
    trainer = Trainer(cfg)
    try:
        trainer.fit()
    finally:
        trainer.close()
    ckpt = tmp_path / "run" / "checkpoints"
    files = corpus_task_files(tmp_path / "data", n=4)
    _tiny_hf_gpt2(tmp_path / "gpt", 0)
    suite = {"name": "tasks", "out": "board",
             "models": [{"name": "race-ft", "checkpoint": str(ckpt)}, {"name": "encoder", "checkpoint": str(bert)},
                        {"name": "gpt", "hf": "gpt"}],
             "tasks": [{"name": "race", "path": str(RACE), "split": "dev"},
                       {"name": "race_gpt3", "path": str(RACE / "dev")},
                       {"name": "lambada", "path": str(files["lambada"])}]}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    report = run_leaderboard(tmp_path / "suite.yaml", progress=False)
    results = report["results"]
    expected = evaluate_checkpoint(RACE, ckpt, "dev")["accuracy"]
    assert results["race-ft"]["race"]["accuracy"] == expected["overall"]
    assert results["race-ft"]["race"]["n"] > 0 and set(results["race-ft"]) == {"race"}
    assert results["encoder"] == {}  # no task scores a plain encoder
    assert set(results["gpt"]) == {"race_gpt3", "lambada"}  # `race` is the fine-tuned evaluation only
    assert "acc_calibrated" in results["gpt"]["race_gpt3"] and results["gpt"]["race_gpt3"]["n"] == 2
    skipped = {(s["model"], s["task"]) for s in report["skipped"]}
    assert {("race-ft", "lambada"), ("race-ft", "race_gpt3"), ("encoder", "race"), ("gpt", "race")} <= skipped
    table = markdown(results)
    assert "race (accuracy)" in table and "race_gpt3 (acc)" in table and "| encoder | - | - | - |" in table
    saved = json.loads((tmp_path / "board" / "results.json").read_text())
    assert saved["results"]["race-ft"]["race"]["accuracy"] == expected["overall"]

    # without race_gpt3 (a suite from before the rename): the language model shows "-", in a warning line
    suite["tasks"], suite["out"] = suite["tasks"][:1], "board2"
    (tmp_path / "suite2.yaml").write_text(yaml.safe_dump(suite))
    assert main(["eval", "leaderboard", str(tmp_path / "suite2.yaml")]) == 0
    warnings = [ln for ln in capsys.readouterr().err.splitlines() if "warning" in ln]
    assert len(warnings) == 1 and warnings[0].startswith("megazoo eval leaderboard: warning: ")
    assert "(gpt)" in warnings[0] and "`race_gpt3`" in warnings[0]
    assert json.loads((tmp_path / "board2" / "results.json").read_text())["results"]["gpt"] == {}
