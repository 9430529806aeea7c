"""Every task package's evaluate stage is tested for the shared output shape (tests/evaluation_shape.py):
some test of the package calls check_evaluation(out, "TASK") on what the stage wrote."""

from __future__ import annotations

import pathlib
import re

from tests.task_contract import task_names

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_every_task_checks_its_evaluation_shape():
    called = set()
    for path in (ROOT / "tests").glob("test_*.py"):
        called |= set(re.findall(r"check_evaluation\([^\n]*?[\"']([a-z_-]+)[\"']\)", path.read_text()))
    missing = [t for t in task_names(ROOT) if t not in called]
    assert not missing, f"no test checks the evaluation shape of: {', '.join(missing)} " \
                        f"(call tests.evaluation_shape.check_evaluation(out, 'TASK') on its evaluate output)"


def test_the_shape_check_refuses_a_wrong_file(tmp_path):
    import json

    import pytest

    from megazoo.eval.taskkit import write_evaluation
    from tests.evaluation_shape import check_evaluation

    out, pred = write_evaluation(tmp_path / "e.json", "race", 3, {"accuracy": 2 / 3}, [{"id": 1}])
    assert pred.name == "e.predictions.jsonl"
    assert check_evaluation(out, "race")["metrics"] == {"accuracy": 2 / 3}
    with pytest.raises(AssertionError, match="task 'race', expected 'bias'"):
        check_evaluation(out, "bias")
    bad = json.loads(out.read_text())
    bad["metrics"] = {"Accuracy": 66.7}
    out.write_text(json.dumps(bad))
    with pytest.raises(AssertionError, match="lower_snake_case"):
        check_evaluation(out, "race")
    bad["metrics"] = {"accuracy": 66.7}
    out.write_text(json.dumps(bad))
    with pytest.raises(AssertionError, match="not a fraction"):
        check_evaluation(out, "race")
    pred.unlink()
    bad["metrics"] = {"accuracy": 0.5}
    out.write_text(json.dumps(bad))
    with pytest.raises(AssertionError, match="missing"):
        check_evaluation(out, "race")
