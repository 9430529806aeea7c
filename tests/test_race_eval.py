"""RACE accuracy per level, the evaluate stage's two files (metrics, predictions: the kit's shape)
and the softmax-averaging ensemble (known numbers), which also reads the older one-object file."""

import json
from pathlib import Path

import pytest
import torch

from megazoo.core.fs import write_json_atomic
from megazoo.eval.taskkit import predictions_path
from megazoo.tasks.race.evaluate import ensemble, predictions_record, race_accuracy, read_predictions, write_evaluation
from tests.evaluation_shape import check_evaluation


def test_accuracy_overall_and_per_level():
    acc = race_accuracy([0, 1, 2, 3, 0], [0, 1, 0, 0, 0], ["middle", "high", "high", "high", "middle"])
    assert acc == {"overall": 3 / 5, "middle": 1.0, "high": 1 / 3}
    assert race_accuracy([1], [1], [""]) == {"overall": 1.0, "middle": None, "high": None}
    with pytest.raises(ValueError, match="no questions"):
        race_accuracy([], [], [])


def _write(path, probs, labels=(0, 1, 2), levels=("middle", "high", "high")):
    record = predictions_record(["m/1#0", "h/1#0", "h/2#0"], list(levels), list(labels), torch.tensor(probs))
    write_evaluation(path, record)
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
    first = (tmp_path / "a.predictions.jsonl").read_text().splitlines()[0]
    assert json.loads(first)["uid"] == "m/1#0"


def test_ensemble_refuses_mismatched_files(tmp_path):
    _write(tmp_path / "a.json", [[1, 0, 0, 0]] * 3)
    _write(tmp_path / "b.json", [[1, 0, 0, 0]] * 3, labels=(0, 1, 3))
    with pytest.raises(ValueError, match="b.json: question 'h/2#0' has label 3"):
        ensemble([tmp_path / "a.json", tmp_path / "b.json"])
    rec = predictions_record(["x#0"], [""], [0], torch.tensor([[1.0, 0, 0, 0]]))
    write_evaluation(tmp_path / "c.json", rec)
    with pytest.raises(ValueError, match="c.json: its questions differ"):
        ensemble([tmp_path / "a.json", tmp_path / "c.json"])
    (tmp_path / "d.json").write_text("not json")
    with pytest.raises(ValueError, match="d.json:1: not a JSON predictions file"):
        read_predictions(tmp_path / "d.json")
    with pytest.raises(FileNotFoundError, match="no such predictions file"):
        read_predictions(tmp_path / "missing.json")
    (tmp_path / "e.predictions.jsonl").write_text('{"uid": "x#0", "label": 0, "probs": [1, 0, 0, 0]}\n'
                                                   '{"uid": "y#0", "label": 0, "probs": [1, 0]}\n')
    with pytest.raises(ValueError, match="e.predictions.jsonl:2: a prediction needs 'uid', 'label' and 'probs'"):
        read_predictions(tmp_path / "e.predictions.jsonl")


def test_two_files_and_an_ensemble_of_their_summaries(tmp_path):
    assert predictions_path("out/test.json") == Path("out/test.predictions.jsonl")
    assert predictions_path("out/test") == Path("out/test.predictions.jsonl")
    for name, probs in (("a", [[0.6, 0.4, 0, 0], [0.1, 0.2, 0.3, 0.4], [0, 0, 0.45, 0.55]]),
                        ("b", [[0, 0.7, 0.1, 0.2], [0.1, 0.6, 0.3, 0], [0, 0, 0.7, 0.3]])):
        record = predictions_record(["m/1#0", "h/1#0", "h/2#0"], ["middle", "high", "high"], [0, 1, 2],
                                    torch.tensor(probs), data="RACE", split="test", checkpoint=f"{name}/iter_1")
        write_evaluation(tmp_path / f"{name}.json", record)
    summary = json.loads((tmp_path / "a.json").read_text())
    metrics = {"accuracy": 1 / 3, "accuracy_middle": 1.0, "accuracy_high": 0.0}
    assert summary == {"task": "race", "n": 3, "metrics": metrics,
                       "counts": {"overall": 3, "middle": 1, "high": 2}, "data": "RACE", "split": "test",
                       "checkpoint": "a/iter_1", "predictions": "a.predictions.jsonl"}
    assert check_evaluation(tmp_path / "a.json", "race") == summary
    rows = [json.loads(line) for line in (tmp_path / "a.predictions.jsonl").read_text().splitlines()]
    assert [r["prediction"] for r in rows] == [0, 3, 3] and rows[1] == {
        "uid": "h/1#0", "level": "high", "label": 1, "prediction": 3, "probs": pytest.approx([0.1, 0.2, 0.3, 0.4])}
    from_summary = read_predictions(tmp_path / "a.json")
    assert from_summary["predictions"] == read_predictions(tmp_path / "a.predictions.jsonl")["predictions"] == rows
    assert (from_summary["data"], from_summary["split"]) == ("RACE", "test")
    e = ensemble([tmp_path / "a.json", tmp_path / "b.predictions.jsonl"])
    assert e["accuracy"] == {"overall": 2 / 3, "middle": 0.0, "high": 1.0} and e["split"] == "test"
    assert not list(tmp_path.glob("*.tmp"))  # written atomically
    (tmp_path / "a.predictions.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match="a.json: a summary whose predictions file .* is missing"):
        read_predictions(tmp_path / "a.json")


def test_a_level_without_questions_has_no_metric(tmp_path):
    record = predictions_record(["h/1#0", "h/2#0"], ["high", "high"], [1, 2], torch.tensor([[0, 1.0, 0, 0]] * 2))
    out, pred = write_evaluation(tmp_path / "sub" / "high.json", record)  # its folder is made
    summary = check_evaluation(out, "race")
    assert summary["metrics"] == {"accuracy": 0.5, "accuracy_high": 0.5}
    assert summary["counts"] == {"overall": 2, "middle": 0, "high": 2} and pred.name == "high.predictions.jsonl"


def test_the_ensemble_reads_the_older_one_object_predictions_file(tmp_path):
    """Earlier versions wrote FILE.predictions.json: the whole record, rows under "predictions"."""
    probs = [[0.6, 0.4, 0, 0], [0.1, 0.2, 0.3, 0.4], [0, 0, 0.45, 0.55]]
    record = predictions_record(["m/1#0", "h/1#0", "h/2#0"], ["middle", "high", "high"], [0, 1, 2],
                                torch.tensor(probs), data="RACE", split="dev")
    write_json_atomic(tmp_path / "old.predictions.json", record)
    old_summary = {"task": "race", "n": 3, "metrics": {"accuracy": 1 / 3}, "predictions": "old.predictions.json"}
    (tmp_path / "old.json").write_text(json.dumps(old_summary))
    write_evaluation(tmp_path / "new.json", record)
    for old in ("old.json", "old.predictions.json"):
        e = ensemble([tmp_path / old, tmp_path / "new.json"])
        assert sum((r["probs"] for r in e["predictions"]), []) == pytest.approx(sum(probs, []))
        assert e["split"] == "dev" and e["accuracy"]["overall"] == 1 / 3
