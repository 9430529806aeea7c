"""The one shape of every task's evaluation output (DESIGN.md 3.5, eval/taskkit.py): FILE.json holds
{"task", "n", "metrics": {name: number in [0, 1] or a perplexity/count}, "predictions": NAME, ...}
and FILE.predictions.EXT lies beside it. Each package's evaluate test calls check_evaluation on what
its stage wrote from tiny fixtures; tests/test_evaluation_shape.py checks that every package does."""

from __future__ import annotations

import json
import math
import pathlib

from megazoo.eval.taskkit import PREDICTION_FORMATS, predictions_path

# metrics that are not fractions (a perplexity, a count, a standard deviation is still a fraction)
UNBOUNDED = ("ppl", "perplexity", "nll", "loss", "count", "tokens", "seconds")


def check_evaluation(out, task: str) -> dict:
    """Assert FILE.json `out` has the shared shape for `task`; return the record."""
    out = pathlib.Path(out)
    record = json.loads(out.read_text())
    assert record["task"] == task, f"{out}: task {record.get('task')!r}, expected {task!r}"
    assert isinstance(record["n"], int) and record["n"] > 0, f"{out}: n must count the examples"
    metrics = record["metrics"]
    assert metrics and all(isinstance(k, str) and k == k.lower() and " " not in k for k in metrics), \
        f"{out}: metric names are lower_snake_case: {list(metrics)}"
    for name, value in metrics.items():
        assert isinstance(value, (int, float)) and math.isfinite(value), f"{out}: metrics.{name} = {value!r}"
        if not any(word in name for word in UNBOUNDED):
            assert 0.0 <= value <= 1.0, f"{out}: metrics.{name} = {value} is not a fraction in [0, 1]"
    name = record["predictions"]
    ext = name[len(out.name[:-len(".json")] + ".predictions"):]
    assert ext in PREDICTION_FORMATS and predictions_path(out, ext).name == name, \
        f"{out}: predictions file {name!r} does not follow FILE.predictions.EXT"
    assert (out.parent / name).is_file(), f"{out}: its predictions file {name} is missing"
    return record
