"""Issue #36 for `megazoo task biomed ...`, as a user runs it: the predictions file beside --out is a
declared output, data and vocab-report write whole folders atomically and never over a user's
files unasked, undecodable files name file and line, user mistakes exit 2 with one line, and
numeric flags are bounded."""

import json
from pathlib import Path

import pytest

from tests.cli_helpers import one_line, run_cli, snapshot

NER = Path(__file__).parent / "fixtures" / "biomed" / "ner"


def run(capsys, *argv):
    return run_cli(capsys, "task", "biomed", *argv)


def test_evaluate_refuses_an_out_whose_predictions_file_is_the_data(tmp_path, capsys):
    data = tmp_path / "eval.predictions.tsv"  # a ChemProt file named like evaluate's re predictions
    data.write_text("1\t@CHEMICAL$ inhibits @GENE$ .\tCPR:4\n")
    before = snapshot(tmp_path)
    code, err = run(capsys, "evaluate", "--kind", "re", "--data", data, "--checkpoint", tmp_path / "ck",
                    "--out", tmp_path / "eval.json", "--overwrite")
    line = one_line(err)
    assert code == 2 and "--out" in line and "eval.predictions.tsv" in line and "is the input --data" in line
    assert snapshot(tmp_path) == before


def test_evaluate_refuses_an_existing_predictions_file_without_overwrite(tmp_path, capsys):
    (tmp_path / "eval.predictions.txt").write_text("a user's predictions\n")
    before = snapshot(tmp_path)
    code, err = run(capsys, "evaluate", "--kind", "ner", "--data", NER / "test.tsv", "--checkpoint", tmp_path / "ck",
                    "--out", tmp_path / "eval.json")
    assert code == 2 and "eval.predictions.txt" in one_line(err) and "exists and is not empty" in err
    assert snapshot(tmp_path) == before


def fake_checkpoint(folder, kind):
    """A checkpoint record (meta.json alone) of a biomed `kind` run: what is read before the data."""
    from megazoo.core.checkpoint.storage import FORMAT, META

    ckpt = folder / "checkpoints" / "iter_0000001"
    ckpt.mkdir(parents=True)
    (ckpt / META).write_text(json.dumps({
        "format": FORMAT, "complete": True, "step": 1, "layout": {}, "json": {}, "per_rank_json": [], "files": {},
        "tensors": {}, "meta": {"task": {"name": "biomed", "kind": kind}, "model": {"arch": "bert"}}}))
    return folder / "checkpoints"


def test_evaluate_names_file_and_line_of_undecodable_data(tmp_path, capsys):
    bad = tmp_path / "test.tsv"
    bad.write_bytes(b"Aspirin\tO\ncaus\xe9s\tO\n")
    ckpt = fake_checkpoint(tmp_path, "ner")
    code, err = run(capsys, "evaluate", "--kind", "ner", "--data", bad, "--checkpoint", ckpt,
                    "--out", tmp_path / "out" / "eval.json")
    assert code == 2 and f"{bad}:2: not valid UTF-8" in one_line(err)
    assert not (tmp_path / "out").exists()


def test_data_refuses_a_folder_with_user_files_and_replaces_it_only_with_overwrite(tmp_path, capsys):
    out = tmp_path / "gen"
    out.mkdir()
    (out / "mine.txt").write_text("the user's\n")
    (tmp_path / "bystander.txt").write_text("beside\n")
    before = snapshot(tmp_path)
    code, err = run(capsys, "data", out, "--ner", "8", "--re", "8", "--qa", "8")
    assert code == 2 and "exists and is not empty" in one_line(err) and "--overwrite" in err
    assert snapshot(tmp_path) == before
    code, err = run(capsys, "data", out, "--ner", "8", "--re", "8", "--qa", "8", "--overwrite")
    assert code == 0, err
    assert not (out / "mine.txt").exists() and (out / "ner" / "train.tsv").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bystander.txt", "gen"]  # no scratch left beside


def test_data_failing_leaves_the_old_folder_and_no_scratch(tmp_path, capsys):
    out = tmp_path / "gen"
    out.mkdir()
    (out / "mine.txt").write_text("the user's\n")
    small = tmp_path / "small.dic"
    small.write_text("3\nnephritis\ngastritis\naspirin\n")  # too few names to split three ways
    before = snapshot(tmp_path)
    code, err = run(capsys, "data", out, "--dictionary", small, "--overwrite")
    assert code == 2 and f"{small}: too few" in one_line(err)
    assert snapshot(tmp_path) == before and sorted(p.name for p in tmp_path.iterdir()) == ["gen", "small.dic"]


def test_vocab_report_refuses_outputs_onto_its_inputs_or_a_users_folder(tmp_path, capsys):
    terms = tmp_path / "terms.txt"
    terms.write_text("nephritis\ngastritis\n")
    vocab = tmp_path / "vocab"  # a tokenizer folder given as --vocab: an input
    vocab.mkdir()
    (vocab / "vocab.txt").write_text("[PAD]\n[UNK]\n")
    before = snapshot(tmp_path)
    for out, what in ((vocab, "is the input --vocab"), (vocab / "report", "lies inside the input folder --vocab"),
                      (tmp_path, "contains")):
        code, err = run(capsys, "vocab-report", "--vocab", "bert=bert-wordpiece", "--vocab", f"mine={vocab}",
                        "--terms", terms, "--out", out, "--overwrite")
        assert code == 2 and what in one_line(err), err
        assert snapshot(tmp_path) == before
    report = tmp_path / "report"
    report.mkdir()
    (report / "mine.md").write_text("the user's notes\n")
    before = snapshot(tmp_path)
    code, err = run(capsys, "vocab-report", "--vocab", "bert-wordpiece", "--vocab", "bert-wordpiece",
                    "--terms", terms, "--out", report)
    assert code == 2 and "exists and is not empty" in one_line(err)
    code, err = run(capsys, "vocab-report", "--vocab", "a=bert-wordpiece", "--vocab", "a=bert-wordpiece",
                    "--terms", terms, "--out", tmp_path / "fresh")
    assert code == 2 and "the name 'a' is given twice" in one_line(err)
    assert snapshot(tmp_path) == before


def test_vocab_report_names_file_and_line_of_undecodable_terms(tmp_path, capsys):
    terms = tmp_path / "terms.txt"
    terms.write_bytes(b"nephritis\nan\xe6mia\n")
    code, err = run(capsys, "vocab-report", "--vocab", "a=bert-wordpiece", "--vocab", "b=bert-wordpiece",
                    "--terms", terms, "--out", tmp_path / "report")
    assert code == 2 and f"{terms}:2: not valid UTF-8" in one_line(err)
    assert not (tmp_path / "report").exists()


@pytest.mark.parametrize("argv", [
    ["evaluate", "--kind", "ner", "--data", "d", "--checkpoint", "c", "--out", "o.json", "--batch", "0"],
    ["evaluate", "--kind", "ner", "--data", "d", "--checkpoint", "c", "--out", "o.json", "--batch", "99999999"],
    ["data", "g", "--ner", "7"],
    ["data", "g", "--re", "1000000000"],
    ["data", "g", "--qa", "nan"],
    ["data", "g", "--qa-sentences", "-1"],
    ["data", "g", "--qa-sentences", "100000"],
    ["data", "g", "--seed", "-3"],
    ["train", "biomed-ner", "--nproc", "0"],
    ["train", "biomed-ner", "--nproc", "100000"],
])
def test_numeric_flags_are_bounded(tmp_path, capsys, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    code, err = run(capsys, *argv)
    assert code == 2 and ("must be between" in err or "expected an integer" in err), err
    assert not list(tmp_path.iterdir())
