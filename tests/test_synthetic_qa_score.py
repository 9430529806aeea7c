"""The synthetic_qa scorer against the official SQuAD scripts' logic (evaluate-v1.1.py and
evaluate-v2.0.py, restated in tests/squad_reference.py as the reference, since the scripts are not offline)
on fixtures with tricky normalisation; v2.0's null threshold and HasAns/NoAns splits; the score
stage's file and its handling of missing ids and bad files."""

import json

import pytest

from megazoo.cli import main as megazoo
from megazoo.tasks.synthetic_qa.score import score
from megazoo.tasks.synthetic_qa.squad import Question, read_squad, write_squad
from tests.squad_reference import qas_of, v1_evaluate, v2_evaluate


def as_printed(metrics, v2=False):
    """Our fractions as the scripts print them: times 100, under their names (v2.0: exact, HasAns_*,
    NoAns_*)."""
    def name(k):
        k = k.replace("has_ans_", "HasAns_").replace("no_ans_", "NoAns_")
        return k.replace("exact_match", "exact") if v2 else k
    return {name(k): 100.0 * v for k, v in metrics.items()}


# --- fixtures ----------------------------------------------------------------------------------
CONTEXT = ("The Eiffel Tower, an iconic landmark, opened in 1889 — a year of the Exposition Universelle. Café "
           "owners called it \"la dame de fer\"; the tower is 330 m tall and an the a.")
# (prediction, gold answers as spans of CONTEXT): articles, punctuation, unicode, several golds, empty
CASES = [
    ("the Eiffel Tower", ["The Eiffel Tower"]),
    ("Eiffel Tower!!", ["The Eiffel Tower"]),
    ("an iconic landmark", ["iconic landmark,"]),
    ("1889", ["1889", "in 1889"]),
    ("in 1889 —", ["1889"]),
    ("Café owners", ["Café"]),
    ("cafe owners", ["Café owners"]),
    ("“la dame de fer”", ["\"la dame de fer\""]),
    ("la dame", ["\"la dame de fer\"", "la dame de fer\";"]),
    ("", ["330 m"]),
    ("a", ["an the a"]),
    ("the", ["a"]),
    ("330 m tall", ["330 m", "the tower is 330 m tall"]),
    ("Exposition   Universelle", ["Exposition Universelle"]),
    ("tower tower tower", ["the tower"]),
]


def dataset(cases, impossible=()):
    qas = []
    for i, (_, golds) in enumerate(cases):
        answers = [{"text": g, "answer_start": CONTEXT.index(g)} for g in golds]
        qas.append({"id": f"q{i}", "question": f"question {i}?", "answers": [] if i in impossible else answers,
                    **({"is_impossible": i in impossible} if impossible else {})})
    return [{"title": "t", "paragraphs": [{"context": CONTEXT, "qas": qas}]}]


def questions_of(data, tmp_path, version="1.1"):
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"version": version, "data": data}, ensure_ascii=False), encoding="utf-8")
    return read_squad(path)


def test_v1_equals_the_official_script(tmp_path):
    data = dataset(CASES)
    preds = {f"q{i}": p for i, (p, _) in enumerate(CASES)}
    ours = score(questions_of(data, tmp_path).questions, preds, v2=False)["metrics"]
    ref = v1_evaluate(qas_of(data), preds)
    assert as_printed(ours) == pytest.approx(ref, abs=1e-12)
    assert 0 < ref["exact_match"] < 100 and 0 < ref["f1"] < 100  # the cases cover both outcomes
    # per question too, where the versions part: "the" vs "a" is EM 1, F1 0 in v1.1
    one = score(questions_of(dataset([("the", ["a"])]), tmp_path).questions, {"q0": "the"})
    assert one["metrics"] == {"exact_match": 1.0, "f1": 0.0}


@pytest.mark.parametrize("thresh", [1.0, 0.5])
def test_v2_equals_the_official_script(tmp_path, thresh):
    impossible = {2, 9, 11}
    data = dataset(CASES, impossible)
    preds = {f"q{i}": ("" if i in (9, 5) else p) for i, (p, _) in enumerate(CASES)}
    na = {f"q{i}": (0.9 if i in (2, 3, 11) else 0.1) for i in range(len(CASES))}
    f = questions_of(data, tmp_path, "v2.0")
    assert f.v2
    ours = score(f.questions, preds, True, na, thresh)
    ref = v2_evaluate(qas_of(data), preds, na, thresh)
    assert as_printed(ours["metrics"], v2=True) == pytest.approx(ref, abs=1e-12)
    assert ours["counts"] == {"total": 15, "has_ans_total": 12, "no_ans_total": 3}
    # without probabilities: the same as the official default (all 0, threshold 1.0)
    assert as_printed(score(f.questions, preds, True)["metrics"], v2=True) == \
        pytest.approx(v2_evaluate(qas_of(data), preds), abs=1e-12)


def test_missing_predictions_score_zero_and_are_listed(tmp_path):
    data = dataset(CASES[:4])
    preds = {"q0": "the Eiffel Tower", "q2": "iconic landmark", "extra": "ignored"}
    r = score(questions_of(data, tmp_path).questions, preds)
    assert r["missing"] == ["q1", "q3"]
    assert as_printed(r["metrics"]) == pytest.approx(v1_evaluate(qas_of(data), preds), abs=1e-12)
    assert r["metrics"]["exact_match"] == 0.5


def test_score_stage_file_and_errors(tmp_path, capsys):
    data = dataset(CASES[:4])
    dev = tmp_path / "dev.json"
    dev.write_text(json.dumps({"version": "1.1", "data": data}, ensure_ascii=False), encoding="utf-8")
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps({"q0": "Eiffel Tower", "q1": "x", "q2": "an iconic landmark"}))
    out = tmp_path / "out.json"
    # a question without a prediction is refused, naming both files (issue #36: ids checked in every score)
    assert megazoo(["task", "synthetic_qa", "score", "--data", str(dev), "--predictions", str(pred),
                    "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{pred}: predictions for other questions than {dev}" in err and "'q3'" in err and err.count("\n") == 0
    assert not out.exists()
    pred.write_text(json.dumps({"q0": "Eiffel Tower", "q1": "x", "q2": "an iconic landmark", "q3": "nothing"}))
    assert megazoo(["task", "synthetic_qa", "score", "--data", str(dev), "--predictions", str(pred),
                    "--out", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["n"] == 4 and set(r["metrics"]) == {"exact_match", "f1"} and r["missing"] == []
    assert r["metrics"]["exact_match"] == 0.5
    bad = tmp_path / "bad.json"
    bad.write_text('{"q0": "a",\n "q1": }\n')
    assert megazoo(["task", "synthetic_qa", "score", "--data", str(dev), "--predictions", str(bad),
                    "--out", str(tmp_path / "out2.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"{bad}:2: not valid JSON" in err and "Traceback" not in err
    assert megazoo(["task", "synthetic_qa", "score", "--data", str(dev), "--predictions", str(tmp_path / "no.json"),
                    "--out", str(tmp_path / "out2.json")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_writer_roundtrip_v1_and_v2(tmp_path):
    paragraphs = [("t", CONTEXT)]
    qs = [Question("a", "Which tower?", CONTEXT, [("Eiffel Tower", CONTEXT.index("Eiffel Tower"))]),
          Question("b", "Who?", CONTEXT, [], is_impossible=True, plausible_answers=[("Café", CONTEXT.index("Café"))])]
    write_squad(tmp_path / "v2.json", paragraphs, qs, "v2.0")
    back = read_squad(tmp_path / "v2.json")
    assert back.v2 and [(q.id, q.answers, q.is_impossible, q.plausible_answers) for q in back.questions] == \
        [(q.id, q.answers, q.is_impossible, q.plausible_answers) for q in qs]
    write_squad(tmp_path / "v1.json", paragraphs, qs[:1])
    raw = json.loads((tmp_path / "v1.json").read_text())
    assert raw["version"] == "1.1" and "is_impossible" not in raw["data"][0]["paragraphs"][0]["qas"][0]
