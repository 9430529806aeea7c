"""The synthetic_qa evaluation for `megazoo eval leaderboard` (entry point
megazoo.evaluations:synthetic_qa).

A suite entry `{name: synthetic_qa, path: DEV.json}` scores every model of the suite trained with
`task: synthetic_qa` (kind qa): the evaluate stage's exact_match and f1 (headline f1) on a SQuAD
v1.1/v2.0 file, as the official script scores them.
"""

from __future__ import annotations

from megazoo.eval.registry import Evaluation
from megazoo.eval.suite_options import suite_int


def run(checkpoint: str, path: str, entry: dict) -> dict:
    from megazoo.tasks.synthetic_qa.cli_common import MAX_BATCH
    from megazoo.tasks.synthetic_qa.evaluate_stage import evaluate_checkpoint

    r = evaluate_checkpoint(path, checkpoint, suite_int(entry, "batch_size", 32, 1, MAX_BATCH))["result"]
    return {**r["metrics"], "n": r["n"]}


EVALUATION = Evaluation(
    name="synthetic_qa", data="a SQuAD v1.1/v2.0 JSON file (the package's hand-written dev set: data/dev.json)",
    metrics=("exact_match", "f1"), headline="f1", run=run, kinds=("synthetic_qa-qa",),
    options={"batch_size": "rows per forward pass (default 32)"})
