"""RACE's evaluation for `megazoo eval leaderboard` (entry point megazoo.evaluations:race).

A suite entry `{name: race, path: RACE_FOLDER, split: test}` scores every model of the suite that
was fine-tuned with `task: race` (a training checkpoint; the BERT encoder with its choice head):
the `evaluate` stage's accuracies. Language models and plain encoders are shown as "-" (fine-tune
an encoder first); GPT-3's zero-shot RACE for language models is the suite task `race_gpt3`
(eval/task_names.py; it was `race` too before issue 41).
"""

from __future__ import annotations

from megazoo.eval.registry import Evaluation
from megazoo.eval.suite_options import suite_int
from megazoo.tasks.race.evaluate import METRICS


def run(checkpoint: str, path: str, entry: dict) -> dict:
    from megazoo.tasks.race.cli_evaluate import MAX_BATCH
    from megazoo.tasks.race.evaluate import race_metrics
    from megazoo.tasks.race.evaluate_stage import evaluate_checkpoint

    batch = suite_int(entry, "batch_size", 8, 1, MAX_BATCH)
    record = evaluate_checkpoint(path, checkpoint, entry.get("split", "test"), batch)
    return {**race_metrics(record["accuracy"]), "n": record["counts"]["overall"]}


EVALUATION = Evaluation(
    name="race", data="a RACE folder (RACE/{train,dev,test}/{middle,high}/*.txt, or HF `race` parquet/JSON)",
    metrics=METRICS, headline="accuracy", run=run, kinds=("race",),
    options={"split": "train, dev or test (default test)", "batch_size": "questions per forward pass (default 8)"})
