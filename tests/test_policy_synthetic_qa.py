"""Issue #36 for `megazoo task synthetic_qa ...`, as a user runs it: no output may replace an input
(score, answers, sample, filter with --rejected and the counts file, evaluate with its
FILE.predictions.json), data never writes over a user's folder unasked and writes it whole (and
answers to its old name, generate), score checks the ids of its predictions against the data,
undecodable files name file and line, user mistakes exit 2 with one line, and numeric flags are
bounded."""

import json

import pytest

import megazoo.tasks.synthetic_qa.generate as generate_module
from tests.cli_helpers import one_line, run_cli, snapshot

CONTEXT = "The Eiffel Tower is an iconic landmark in Paris."
DATA = {"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": CONTEXT, "qas": [
    {"id": "q0", "question": "What is in Paris?", "answers": [{"text": "The Eiffel Tower", "answer_start": 0}]},
    {"id": "q1", "question": "Where is it?", "answers": [{"text": "Paris", "answer_start": 42}]}]}]}]}


def run(capsys, *argv):
    return run_cli(capsys, "task", "synthetic_qa", *argv)


@pytest.fixture
def files(tmp_path):
    dev = tmp_path / "dev.json"
    dev.write_text(json.dumps(DATA))
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps({"q0": "Eiffel Tower", "q1": "Paris"}))
    (tmp_path / "ck").mkdir()
    (tmp_path / "ck" / "keep.txt").write_text("a checkpoint\n")
    return tmp_path, dev, pred


@pytest.mark.parametrize("argv, label, relation", [
    # the case of the issue: score --out = an input replaced the input
    (["score", "--data", "{dev}", "--predictions", "{pred}", "--out", "{dev}"], "--out", "is the input --data"),
    (["score", "--data", "{dev}", "--predictions", "{pred}", "--out", "{pred}"], "--out", "is the input --predictions"),
    (["score", "--data", "{dev}", "--predictions", "{pred}", "--out", "{tmp}/o.json", "--na-probs", "{tmp}/o.json"],
     "--out", "is the input --na-probs"),
    (["answers", "--data", "{dev}", "--checkpoint", "{tmp}/ck", "--out", "{dev}"], "--out", "is the input --data"),
    (["answers", "--data", "{dev}", "--checkpoint", "{tmp}/ck", "--out", "{tmp}/ck/a.json"], "--out",
     "lies inside the input folder --checkpoint"),
    (["sample", "--data", "{dev}", "--checkpoint", "{tmp}/ck", "--out", "{dev}"], "--out", "is the input --data"),
    # sample and filter write FILE.counts.json beside --out: dev.counts.json here is the data
    (["sample", "--data", "{tmp}/q.counts.json", "--checkpoint", "{tmp}/ck", "--out", "{tmp}/q.json"],
     "--out", "(writes q.counts.json) is the input --data"),
    (["filter", "--data", "{dev}", "--checkpoint", "{tmp}/ck", "--out", "{dev}"], "--out", "is the input --data"),
    (["filter", "--data", "{dev}", "--checkpoint", "{tmp}/ck", "--out", "{tmp}/kept.json", "--rejected", "{dev}"],
     "--rejected", "is the input --data"),
    (["filter", "--data", "{dev}", "--checkpoint", "{tmp}/ck", "--out", "{tmp}/kept.json",
      "--rejected", "{tmp}/kept.json"],
     "--rejected", "is written twice"),
    (["filter", "--data", "{tmp}/k.counts.json", "--checkpoint", "{tmp}/ck", "--out", "{tmp}/k.json"],
     "--out", "(writes k.counts.json) is the input --data"),
    (["evaluate", "--data", "{dev}", "--checkpoint", "{tmp}/ck", "--out", "{dev}"], "--out", "is the input --data"),
    # evaluate writes FILE.predictions.json beside --out
    (["evaluate", "--data", "{tmp}/e.predictions.json", "--checkpoint", "{tmp}/ck", "--out", "{tmp}/e.json"],
     "--out", "(writes e.predictions.json) is the input --data"),
])
def test_an_output_onto_an_input_is_refused_and_changes_nothing(files, capsys, argv, label, relation):
    tmp, dev, pred = files
    for name in ("q.counts.json", "k.counts.json", "o.json", "e.predictions.json"):
        (tmp / name).write_text(json.dumps(DATA))
    before = snapshot(tmp)
    for extra in ([], ["--overwrite"]):
        code, err = run(capsys, *[a.format(dev=dev, pred=pred, tmp=tmp) for a in argv], *extra)
        line = one_line(err)
        assert code == 2 and line.startswith(f"megazoo task synthetic_qa {argv[0]}: error: {label}"), line
        assert relation in line, line
        assert snapshot(tmp) == before


def test_generate_refuses_a_folder_with_user_files_and_replaces_it_only_with_overwrite(tmp_path, capsys,
                                                                                       monkeypatch):
    paragraphs = [f"Paragraph {i}: the interpreter reads the source, compiles it and runs the result; "
                  f"a module is imported once and cached for later imports in the same process." for i in range(8)]
    monkeypatch.setattr(generate_module, "corpus_paragraphs", lambda exclude, seed: list(paragraphs))
    out = tmp_path / "gen"
    out.mkdir()
    (out / "train.json").write_text("the user's own training set\n")
    before = snapshot(tmp_path)
    code, err = run(capsys, "data", out, "--text-paragraphs", "3")
    assert code == 2 and "exists and is not empty" in one_line(err) and "--overwrite" in err
    assert snapshot(tmp_path) == before
    code, err = run(capsys, "generate", out, "--text-paragraphs", "3", "--overwrite")  # the old name of data
    assert code == 0 and err.strip() == "megazoo task synthetic_qa: note: `generate` is now `data`", err
    assert sorted(p.name for p in out.iterdir()) == ["dev.json", "paragraphs.json", "qg.jsonl", "train.json"]
    assert json.loads((out / "train.json").read_text())["data"]
    assert [p.name for p in tmp_path.iterdir()] == ["gen"]  # no scratch folder left beside it


def test_generate_failing_leaves_the_old_folder_and_no_scratch(tmp_path, capsys, monkeypatch):
    def broken(exclude, seed):
        raise ValueError("the corpus is unreadable")

    monkeypatch.setattr(generate_module, "corpus_paragraphs", broken)
    out = tmp_path / "gen"
    out.mkdir()
    (out / "mine.txt").write_text("the user's\n")
    before = snapshot(tmp_path)
    code, err = run(capsys, "data", out, "--overwrite")
    assert code == 2 and "the corpus is unreadable" in one_line(err)
    assert snapshot(tmp_path) == before and [p.name for p in tmp_path.iterdir()] == ["gen"]


def test_score_checks_prediction_ids_against_the_data(files, capsys):
    tmp, dev, pred = files
    for preds, found in (({"q0": "Eiffel Tower"}, "nothing for 1 of its 2 questions (e.g. 'q1')"),
                         ({"q0": "x", "q1": "y", "q9": "z"}, "1 ids that"),
                         ({"a": "x", "b": "y"}, "2 ids that")):
        pred.write_text(json.dumps(preds))
        code, err = run(capsys, "score", "--data", dev, "--predictions", pred, "--out", tmp / "s.json")
        line = one_line(err)
        assert code == 2 and f"{pred}: predictions for other questions than {dev}" in line and found in line, line
        assert not (tmp / "s.json").exists()


def test_score_checks_no_answer_probabilities(files, capsys):
    tmp, dev, pred = files
    na = tmp / "na.json"
    na.write_text(json.dumps({"q0": 0.1, "q1": 0.9}))
    code, err = run(capsys, "score", "--data", dev, "--predictions", pred, "--out", tmp / "s.json", "--na-probs", na)
    assert code == 2 and "--na-probs applies to SQuAD v2.0 data" in one_line(err)
    v2 = tmp / "v2.json"
    v2.write_text(json.dumps({**DATA, "version": "v2.0"}))
    na.write_text(json.dumps({"q0": 0.1}))
    code, err = run(capsys, "score", "--data", v2, "--predictions", pred, "--out", tmp / "s.json", "--na-probs", na)
    assert code == 2 and f"{na}: no-answer probabilities for other questions than {v2}" in one_line(err)
    na.write_text(json.dumps({"q0": 0.1, "q1": 7}))
    code, err = run(capsys, "score", "--data", v2, "--predictions", pred, "--out", tmp / "s.json", "--na-probs", na)
    assert code == 2 and "give a number in [0, 1]" in one_line(err)
    na.write_text(json.dumps({"q0": 0.1, "q1": 0.2}))
    code, err = run(capsys, "score", "--data", v2, "--predictions", pred, "--out", tmp / "s.json", "--na-probs", na)
    assert code == 0, err


def test_undecodable_files_name_file_and_line(files, capsys):
    tmp, dev, pred = files
    pred.write_bytes(b'{"q0": "Eiffel Tower",\n "q1": "Par\xeds"}\n')
    code, err = run(capsys, "score", "--data", dev, "--predictions", pred, "--out", tmp / "s.json")
    assert code == 2 and f"{pred}:2: not valid UTF-8" in one_line(err)
    bad = tmp / "bad.json"
    bad.write_bytes(json.dumps(DATA, indent=1).replace("Paris", "Par\udcedis", 1)
                    .encode("utf-8", "surrogateescape"))
    for argv in (["score", "--data", bad, "--predictions", tmp / "dev.json", "--out", tmp / "s.json"],
                 ["answers", "--data", bad, "--checkpoint", tmp / "ck", "--out", tmp / "a.json"],
                 ["filter", "--data", bad, "--checkpoint", tmp / "ck", "--out", tmp / "k.json"]):
        code, err = run(capsys, *argv)
        assert code == 2 and f"{bad}:" in one_line(err) and "not valid UTF-8" in err, err
    assert not {"s.json", "a.json", "k.json"} & {p.name for p in tmp.iterdir()}


def test_user_mistakes_exit_2_with_one_line(files, capsys):
    tmp, dev, pred = files
    code, err = run(capsys, "evaluate", "--data", dev, "--checkpoint", tmp / "none", "--out", tmp / "e.json")
    assert code == 2 and "checkpoint" in one_line(err) and "does not exist" in err
    code, err = run(capsys, "answers", "--data", tmp / "none.json", "--checkpoint", tmp / "ck", "--out", tmp / "a.json")
    assert code == 2 and "--data" in one_line(err) and "no such file" in err


@pytest.mark.parametrize("argv", [
    ["score", "--data", "d", "--predictions", "p", "--out", "o.json", "--na-threshold", "2"],
    ["score", "--data", "d", "--predictions", "p", "--out", "o.json", "--na-threshold", "nan"],
    ["evaluate", "--data", "d", "--checkpoint", "c", "--out", "o.json", "--null-threshold", "inf"],
    ["evaluate", "--data", "d", "--checkpoint", "c", "--out", "o.json", "--null-threshold", "1e9"],
    ["evaluate", "--data", "d", "--checkpoint", "c", "--out", "o.json", "--batch", "0"],
    ["answers", "--data", "d", "--checkpoint", "c", "--out", "o.json", "--top", "0"],
    ["answers", "--data", "d", "--checkpoint", "c", "--out", "o.json", "--top", "1000000"],
    ["sample", "--data", "d", "--checkpoint", "c", "--out", "o.json", "--samples", "1000000000"],
    ["sample", "--data", "d", "--checkpoint", "c", "--out", "o.json", "--temperature", "1e9"],
    ["sample", "--data", "d", "--checkpoint", "c", "--out", "o.json", "--max-new-tokens", "100000000"],
    ["sample", "--data", "d", "--checkpoint", "c", "--out", "o.json", "--top-k", "-1"],
    ["sample", "--data", "d", "--checkpoint", "c", "--out", "o.json", "--seed", "-1"],
    ["filter", "--data", "d", "--checkpoint", "c", "--out", "o.json", "--batch", "100000000"],
    ["filter", "--data", "d", "--checkpoint", "c", "--out", "o.json", "--threshold", "1.5"],
    ["data", "g", "--train-paragraphs", "0"],
    ["data", "g", "--text-paragraphs", "1e12"],
    ["train", "synthetic_qa", "--nproc", "100000"],
])
def test_numeric_flags_are_bounded(tmp_path, capsys, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    code, err = run(capsys, *argv)
    assert code == 2 and ("must be" in err or "expected a" in err), err
    assert not list(tmp_path.iterdir())
