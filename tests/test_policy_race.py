"""Issue #36 for `megazoo task race ...`, as a user runs it: outputs never replace inputs (the
predictions file beside --out included), user mistakes exit 2 with one line, ids are checked
between predictions files, undecodable files name file and line, numeric flags are bounded."""

import json

import pytest
import torch

from megazoo.tasks.race.evaluate import predictions_record, write_evaluation
from tests.cli_helpers import one_line, run_cli, snapshot
from tests.evaluation_shape import check_evaluation

UIDS = ["middle/1#0", "high/1#0", "high/2#0"]


def run(capsys, *argv):
    return run_cli(capsys, "task", "race", *argv)


def evaluation(folder, name, uids=UIDS, probs=None):
    probs = probs or [[0.6, 0.4, 0, 0], [0.1, 0.2, 0.3, 0.4], [0, 0, 0.45, 0.55]]
    record = predictions_record(uids, ["middle", "high", "high"][:len(uids)], [0, 1, 2][:len(uids)],
                                torch.tensor(probs[:len(uids)]), data="RACE", split="test")
    return write_evaluation(folder / f"{name}.json", record)


def test_ensemble_out_onto_an_inputs_predictions_file_is_refused(tmp_path, capsys):
    evaluation(tmp_path, "a")
    evaluation(tmp_path, "b")
    before = snapshot(tmp_path)
    # the case of the issue: --out a.json would write a.predictions.json, the file a.json stands for
    for argv in (["a.predictions.jsonl", "b.predictions.jsonl", "--out", "a.json"],
                 ["a.json", "b.json", "--out", "a.json", "--overwrite"],
                 ["a.predictions.jsonl", "b.json", "--out", "a.json", "--overwrite"]):
        code, err = run(capsys, "ensemble", *[str(tmp_path / a) if a.startswith(("a.", "b.")) else a for a in argv])
        assert code == 2, err
        line = one_line(err)
        assert line.startswith("megazoo task race ensemble: error: --out") and "a.json" in line, line
        assert snapshot(tmp_path) == before


def test_ensemble_refuses_an_out_onto_the_file_a_summary_leads_to(tmp_path, capsys):
    evaluation(tmp_path, "a")
    evaluation(tmp_path, "b")
    # s.json is a summary naming a.predictions.jsonl: `--out a.json` would replace what s.json reads
    summary = json.loads((tmp_path / "a.json").read_text())
    (tmp_path / "s.json").write_text(json.dumps(summary))
    (tmp_path / "a.json").unlink()
    before = snapshot(tmp_path)
    code, err = run(capsys, "ensemble", str(tmp_path / "s.json"), str(tmp_path / "b.json"),
                    "--out", str(tmp_path / "a.json"), "--overwrite")
    assert code == 2 and "a.predictions.jsonl" in one_line(err) and "is the input" in err
    assert snapshot(tmp_path) == before


def test_ensemble_writes_a_fresh_out_and_its_predictions(tmp_path, capsys):
    evaluation(tmp_path, "a")
    evaluation(tmp_path, "b")
    code, err = run(capsys, "ensemble", str(tmp_path / "a.json"), str(tmp_path / "b.json"),
                    "--out", str(tmp_path / "e.json"))
    assert code == 0, err
    summary = check_evaluation(tmp_path / "e.json", "race")
    assert summary["counts"]["overall"] == summary["n"] == 3 and summary["predictions"] == "e.predictions.jsonl"
    assert len((tmp_path / "e.predictions.jsonl").read_text().splitlines()) == 3


def test_evaluate_refuses_an_out_whose_predictions_file_is_the_data_or_exists(tmp_path, capsys):
    data = tmp_path / "r.predictions.jsonl"
    data.write_text("{}")
    (tmp_path / "old.predictions.jsonl").write_text("a user's predictions\n")
    before = snapshot(tmp_path)
    code, err = run(capsys, "evaluate", "--data", str(data), "--checkpoint", str(tmp_path / "ck"),
                    "--out", str(tmp_path / "r.json"), "--overwrite")
    assert code == 2 and "is the input --data" in one_line(err)
    code, err = run(capsys, "evaluate", "--data", str(tmp_path / "nowhere"), "--checkpoint", str(tmp_path / "ck"),
                    "--out", str(tmp_path / "old.json"))
    assert code == 2 and "old.predictions.jsonl" in one_line(err) and "exists" in err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("argv, message", [
    (["ensemble", "{tmp}/none.json"], "none.json: no such predictions file"),
    (["ensemble", "{tmp}/bad.json"], "bad.json:2: not a JSON predictions file"),
    (["evaluate", "--data", "{tmp}/nothing", "--checkpoint", "{tmp}", "--out", "{tmp}/o.json"],
     "nothing: no such RACE folder"),
    (["data", "{tmp}/full"], "exists and is not empty"),
])
def test_user_mistakes_exit_2_with_one_line(tmp_path, capsys, argv, message):
    (tmp_path / "bad.json").write_text('{"predictions":\n  [1, }\n')
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine.txt").write_text("the user's\n")
    before = snapshot(tmp_path)
    code, err = run(capsys, *[a.format(tmp=tmp_path) for a in argv])
    assert code == 2, err
    assert message.format(tmp=tmp_path) in one_line(err)
    assert snapshot(tmp_path) == before


def test_ensemble_checks_the_question_ids_of_every_file(tmp_path, capsys):
    evaluation(tmp_path, "a")
    evaluation(tmp_path, "fewer", uids=UIDS[:2])
    evaluation(tmp_path, "other", uids=["middle/1#0", "high/1#0", "high/9#0"])
    code, err = run(capsys, "ensemble", str(tmp_path / "a.json"), str(tmp_path / "fewer.json"))
    line = one_line(err)
    assert code == 2 and "fewer.predictions.jsonl" not in line  # the file as the user named it
    assert f"{tmp_path / 'fewer.json'}: its questions differ from {tmp_path / 'a.json'}'s" in line
    assert "lacks 1 of its questions (e.g. 'high/2#0')" in line
    code, err = run(capsys, "ensemble", str(tmp_path / "a.json"), str(tmp_path / "other.json"))
    assert code == 2 and "1 questions not in" in one_line(err) and "'high/9#0'" in err
    lines = (tmp_path / "a.predictions.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "twice.predictions.jsonl").write_text("".join(lines + lines[:1]))
    code, err = run(capsys, "ensemble", str(tmp_path / "twice.predictions.jsonl"))
    assert code == 2 and "question 'middle/1#0' is predicted twice" in one_line(err)


def test_undecodable_predictions_name_file_and_line(tmp_path, capsys):
    evaluation(tmp_path, "a")
    bad = tmp_path / "latin1.predictions.json"
    bad.write_bytes(b'{"predictions": [\n  {"uid": "caf\xe9"}]}\n')
    code, err = run(capsys, "ensemble", str(tmp_path / "a.json"), str(bad))
    assert code == 2 and f"{bad}:2: not valid UTF-8" in one_line(err)
    lines = tmp_path / "latin1.predictions.jsonl"
    lines.write_bytes(b'{"uid": "a", "label": 0, "probs": [1, 0, 0, 0]}\n{"uid": "caf\xe9"}\n')
    code, err = run(capsys, "ensemble", str(tmp_path / "a.json"), str(lines))
    assert code == 2 and f"{lines}:2: not valid UTF-8" in one_line(err)


@pytest.mark.parametrize("argv", [
    ["evaluate", "--data", "d", "--checkpoint", "c", "--out", "o.json", "--batch", "0"],
    ["evaluate", "--data", "d", "--checkpoint", "c", "--out", "o.json", "--batch", "100000000"],
    ["data", "g", "--articles", "0"],
    ["data", "g", "--articles", "1000000000"],
    ["data", "g", "--words", "1e9"],
    ["data", "g", "--words", "3"],
    ["data", "g", "--questions", "1000"],
    ["data", "g", "--seed", "-1"],
    ["train", "race", "--nproc", "100000"],
])
def test_numeric_flags_are_bounded(tmp_path, capsys, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    code, err = run(capsys, *argv)
    assert code == 2 and ("must be between" in err or "expected an integer" in err), err
    assert not list(tmp_path.iterdir())
