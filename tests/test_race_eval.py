"""RACE accuracy per level, the evaluate stage's two files (metrics, predictions) and the
softmax-averaging ensemble (known numbers)."""

import json
from pathlib import Path

import pytest
import torch

from megazoo.tasks.race.evaluate import (ensemble, predictions_path, predictions_record, race_accuracy,
                                        read_predictions, write_evaluation, write_json_atomic)


def test_accuracy_overall_and_per_level():
    acc = race_accuracy([0, 1, 2, 3, 0], [0, 1, 0, 0, 0], ["middle", "high", "high", "high", "middle"])
    assert acc == {"overall": 3 / 5, "middle": 1.0, "high": 1 / 3}
    assert race_accuracy([1], [1], [""]) == {"overall": 1.0, "middle": None, "high": None}
    with pytest.raises(ValueError, match="no questions"):
        race_accuracy([], [], [])


def _write(path, probs, labels=(0, 1, 2), levels=("middle", "high", "high")):
    record = predictions_record(["m/1#0", "h/1#0", "h/2#0"], list(levels), list(labels), torch.tensor(probs))
    write_json_atomic(path, record)
    return record


def test_ensemble_averages_softmaxes(tmp_path):
    a = _write(tmp_path / "a.json", [[0.6, 0.4, 0.0, 0.0], [0.1, 0.2, 0.3, 0.4], [0.0, 0.0, 0.45, 0.55]])
    b = _write(tmp_path / "b.json", [[0.0, 0.7, 0.1, 0.2], [0.1, 0.6, 0.3, 0.0], [0.0, 0.0, 0.7, 0.3]])
    assert a["accuracy"] == {"overall": 1 / 3, "middle": 1.0, "high": 0.0}
    assert b["accuracy"] == {"overall": 2 / 3, "middle": 0.0, "high": 1.0}
    e = ensemble([tmp_path / "a.json", tmp_path / "b.json"])
    probs = [r["probs"] for r in e["predictions"]]
    expected = [[0.3, 0.55, 0.05, 0.1], [0.1, 0.4, 0.3, 0.2], [0.0, 0.0, 0.575, 0.425]]
    assert torch.allclose(torch.tensor(probs, dtype=torch.float64), torch.tensor(expected, dtype=torch.float64))
    # question 1: a says 0 (right), b says 1; the average says 1 (wrong): neither member's answer copied
    assert [r["prediction"] for r in e["predictions"]] == [1, 1, 2]
    assert e["accuracy"] == {"overall": 2 / 3, "middle": 0.0, "high": 1.0}
    assert e["counts"] == {"overall": 3, "middle": 1, "high": 2}
    assert json.loads((tmp_path / "a.json").read_text())["predictions"][0]["uid"] == "m/1#0"


def test_ensemble_refuses_mismatched_files(tmp_path):
    _write(tmp_path / "a.json", [[1, 0, 0, 0]] * 3)
    _write(tmp_path / "b.json", [[1, 0, 0, 0]] * 3, labels=(0, 1, 3))
    with pytest.raises(ValueError, match="b.json: question 'h/2#0' has label 3"):
        ensemble([tmp_path / "a.json", tmp_path / "b.json"])
    rec = predictions_record(["x#0"], [""], [0], torch.tensor([[1.0, 0, 0, 0]]))
    write_json_atomic(tmp_path / "c.json", rec)
    with pytest.raises(ValueError, match="c.json: its questions differ"):
        ensemble([tmp_path / "a.json", tmp_path / "c.json"])
    (tmp_path / "d.json").write_text("not json")
    with pytest.raises(ValueError, match="d.json:1: not a JSON predictions file"):
        read_predictions(tmp_path / "d.json")
    with pytest.raises(FileNotFoundError, match="no such predictions file"):
        read_predictions(tmp_path / "missing.json")


def test_two_files_and_an_ensemble_of_their_summaries(tmp_path):
    assert predictions_path("out/test.json") == Path("out/test.predictions.json")
    assert predictions_path("out/test") == Path("out/test.predictions.json")
    for name, probs in (("a", [[0.6, 0.4, 0, 0], [0.1, 0.2, 0.3, 0.4], [0, 0, 0.45, 0.55]]),
                        ("b", [[0, 0.7, 0.1, 0.2], [0.1, 0.6, 0.3, 0], [0, 0, 0.7, 0.3]])):
        record = predictions_record(["m/1#0", "h/1#0", "h/2#0"], ["middle", "high", "high"], [0, 1, 2],
                                    torch.tensor(probs), data="RACE", split="test", checkpoint=f"{name}/iter_1")
        write_evaluation(tmp_path / f"{name}.json", record)
    summary = json.loads((tmp_path / "a.json").read_text())
    metrics = {"accuracy": 1 / 3, "accuracy_middle": 1.0, "accuracy_high": 0.0}
    assert summary == {"task": "race", "n": 3, "metrics": metrics,
                       "counts": {"overall": 3, "middle": 1, "high": 2}, "data": "RACE", "split": "test",
                       "checkpoint": "a/iter_1", "predictions": "a.predictions.json"}
    assert read_predictions(tmp_path / "a.json") == read_predictions(tmp_path / "a.predictions.json")
    e = ensemble([tmp_path / "a.json", tmp_path / "b.predictions.json"])
    assert e["accuracy"] == {"overall": 2 / 3, "middle": 0.0, "high": 1.0}
    assert not list(tmp_path.glob("*.tmp"))  # written atomically
    (tmp_path / "a.predictions.json").unlink()
    with pytest.raises(FileNotFoundError, match="a.json: a summary whose predictions file .* is missing"):
        read_predictions(tmp_path / "a.json")
