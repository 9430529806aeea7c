"""Issue #36 cases of `megazoo task story ...`, run as a user runs them: outputs that would replace an
input, `data` into a folder holding the user's files, bounded numeric flags (`sample --limit -3`
is no longer "all"), undecodable files named with their line, and generations checked against the
data by count and id. Every refusal is one line, exit 2, and leaves every file as it was."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli_helpers import one_line, run_cli, snapshot as digest

FIX = Path(__file__).parent / "fixtures" / "story"
HEADER = "storyid,storytitle,sentence1,sentence2,sentence3,sentence4,sentence5\n"


def run(argv, capsys):
    return run_cli(capsys, *argv)


def record(sid: str) -> str:
    return json.dumps({"id": sid, "first": "x.", "keywords": [["a"], [], [], []], "knowledge": [[], [], [], []],
                       "sentences": ["A b c d.", "E f g h.", "I j k l.", "M n o p."]}) + "\n"


@pytest.fixture
def box(tmp_path):
    """data.csv (stories s1, s2, s3), gen.jsonl (sample's records of all three), a checkpoint folder."""
    (tmp_path / "data.csv").write_text(HEADER + "".join(f"s{i},T,Max went out.,A.,B.,C.,D.\n" for i in (1, 2, 3)))
    (tmp_path / "gen.jsonl").write_text("".join(record(f"s{i}") for i in (1, 2, 3)))
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "bystander.txt").write_text("must survive\n")
    return tmp_path


def evaluate(box, *extra, out=None, generations=None):
    return ["task", "story", "evaluate", "--data", str(box / "data.csv"), "--generations",
            str(generations or box / "gen.jsonl"), "--out", str(out or box / "e.json"), *extra]


def sample(box, *extra, out=None):
    return ["task", "story", "sample", "--checkpoint", str(box / "ckpt"), "--data", str(box / "data.csv"),
            "--out", str(out or box / "g.jsonl"), *extra]


def test_sample_out_equal_to_data_is_refused(box, capsys):
    before = digest(box)
    code, err = run(sample(box, out=box / "data.csv"), capsys)
    assert code == 2 and "is the input --data" in one_line(err)
    assert digest(box) == before


def test_sample_out_inside_the_checkpoint_is_refused(box, capsys):
    before = digest(box)
    code, err = run(sample(box, out=box / "ckpt" / "g.jsonl"), capsys)
    assert code == 2 and "lies inside the input folder --checkpoint" in one_line(err)
    assert digest(box) == before


@pytest.mark.parametrize("which", ["data", "generations"])
def test_evaluate_out_equal_to_an_input_is_refused(box, capsys, which):
    before = digest(box)
    code, err = run(evaluate(box, out=box / ("data.csv" if which == "data" else "gen.jsonl")), capsys)
    assert code == 2 and f"is the input --{which}" in one_line(err)
    assert digest(box) == before


def test_evaluate_matching_generations(box, capsys):
    code, err = run(evaluate(box), capsys)
    assert code == 0, err
    assert json.loads((box / "e.json").read_text())["n"] == 3
    assert len((box / "e.predictions.jsonl").read_text().splitlines()) == 3


def test_evaluate_predictions_file_equal_to_an_input_is_refused(box, capsys):
    gens = box / "e.predictions.jsonl"  # where --out e.json would put its predictions
    shutil.copyfile(box / "gen.jsonl", gens)
    before = digest(box)
    code, err = run(evaluate(box, generations=gens), capsys)
    assert code == 2 and "is the input --generations" in one_line(err)
    assert digest(box) == before


@pytest.mark.parametrize("ids", [["s1", "s2"], ["s1", "s2", "s3", "s4"]])
def test_evaluate_generations_of_another_count_name_both_files(box, capsys, ids):
    gens = box / "gen.jsonl"
    gens.write_text("".join(record(i) for i in ids))
    before = digest(box)
    code, err = run(evaluate(box), capsys)
    line = one_line(err)
    assert code == 2 and line.startswith(f"megazoo task story evaluate: error: {gens}:")
    assert f"{len(ids)} generated stories for the 3 stories of {box / 'data.csv'}" in line
    assert digest(box) == before


def test_evaluate_limit_matches_sample_limit(box, capsys):
    (box / "gen.jsonl").write_text(record("s1") + record("s2"))  # what `sample --limit 2` writes
    code, err = run(evaluate(box, "--limit", "2"), capsys)
    assert code == 0, err


def test_evaluate_generations_of_other_stories_are_refused(box, capsys):
    gens = box / "gen.jsonl"
    gens.write_text(record("s1") + record("zz") + record("s3"))
    code, err = run(evaluate(box), capsys)
    assert code == 2 and f"{gens}:2: story id 'zz', but story 2 of {box / 'data.csv'} is 's2'" in one_line(err)
    assert not (box / "e.json").exists()


def test_data_refuses_a_folder_with_user_files(tmp_path, capsys):
    out = tmp_path / "set"
    out.mkdir()
    (out / "mine.txt").write_text("the user's\n")
    before = digest(tmp_path)
    code, err = run(["task", "story", "data", str(out), "--stories", "10"], capsys)
    assert code == 2 and "exists and is not empty" in one_line(err) and "--overwrite" in err
    assert digest(tmp_path) == before


def test_data_overwrite_that_fails_keeps_the_old_folder(tmp_path, capsys):
    out = tmp_path / "set"
    out.mkdir()
    (out / "mine.txt").write_text("the user's\n")
    bad = tmp_path / "bad.csv"
    shutil.copyfile(FIX / "short_row.csv", bad)
    before = digest(tmp_path)
    code, err = run(["task", "story", "data", str(out), "--rocstories", str(bad), "--overwrite"], capsys)
    assert code == 2 and f"{bad}:3:" in one_line(err)
    assert digest(tmp_path) == before  # the old folder intact, no scratch folder left


def test_data_rocstories_equal_to_out_is_refused(tmp_path, capsys):
    out = tmp_path / "set"
    out.mkdir()
    shutil.copyfile(FIX / "rocstories_raw.csv", out / "r.csv")
    before = digest(tmp_path)
    code, err = run(["task", "story", "data", str(out), "--rocstories", str(out / "r.csv"), "--overwrite"], capsys)
    assert code == 2 and "contains the input --rocstories" in one_line(err)
    assert digest(tmp_path) == before


@pytest.mark.parametrize("argv", [
    ["sample", "--limit", "-3"], ["sample", "--n-knowledge", "-1"], ["sample", "--candidates", "0"],
    ["sample", "--max-new-tokens", "100000"], ["sample", "--batch", "1e9"],
    ["evaluate", "--limit", "-1"], ["data", "--stories", "0"], ["data", "--stories", "1e12"],
    ["data", "--seed", "-1"], ["data", "--keywords", "1000"], ["label", "--candidates", "1"],
    ["label", "--stories", "-5"],
])
def test_numeric_flags_are_bounded(box, capsys, argv):
    stage, rest = argv[0], argv[1:]
    if stage == "sample":
        full = sample(box, *rest)
    elif stage == "evaluate":
        full = evaluate(box, *rest)
    elif stage == "data":
        full = ["task", "story", "data", str(box / "new"), *rest]
    else:
        full = ["task", "story", "label", "--data", str(box), "--knowledge", str(box / "data.csv"), "--embedder",
                str(box / "ckpt"), "--out", str(box.parent / "labels"), *rest]
    before = digest(box)
    code, err = run(full, capsys)
    assert code == 2 and f"argument {rest[0]}" in err and "Traceback" not in err
    assert digest(box) == before


@pytest.mark.parametrize("which", ["--data", "--keywords", "--knowledge"])
def test_undecodable_inputs_name_file_and_line(box, capsys, which):
    bad = box / "bad.txt"
    if which == "--data":
        bad.write_bytes(HEADER.encode() + b"s1,T,Caf\xe9 time.,A.,B.,C.,D.\n")
        argv = sample(box)
        argv[argv.index("--data") + 1] = str(bad)
        line, col = 2, 9
    elif which == "--keywords":
        bad.write_bytes(b'[["a"], [], [], []]\n[["\xff"], [], [], []]\n[["c"], [], [], []]\n')
        argv = sample(box, "--keywords", str(bad))
        line, col = 2, 4
    else:
        bad.write_bytes(b"dog\tIsA\tanimal\n\xc3\tIsA\tthing\n")
        argv = sample(box, "--knowledge", str(bad))
        line, col = 2, 1
    code, err = run(argv, capsys)
    assert code == 2 and f"{bad}:{line}: not valid UTF-8 (byte 0x" in one_line(err) and f"column {col})" in err


def test_undecodable_generations_name_file_and_line(box, capsys):
    gens = box / "gen.jsonl"
    gens.write_bytes(record("s1").encode() + b'{"id": "s2\x80"}\n')
    code, err = run(evaluate(box), capsys)
    assert code == 2 and f"{gens}:2: not valid UTF-8 (byte 0x80" in one_line(err)


def test_undecodable_ranker_file_names_file_and_line(tmp_path):
    from megazoo.core.data.errors import DataError
    from megazoo.tasks.story.weak_labels import read_ranker_jsonl

    path = tmp_path / "ranker-train.jsonl"
    path.write_bytes(b'\n\n{"context": ["\xfe"]}\n')
    with pytest.raises(DataError, match=rf"{path}:3: not valid UTF-8 \(byte 0xfe"):
        read_ranker_jsonl(path)


def test_a_csv_the_csv_module_cannot_read_is_one_line(box, capsys):
    import csv

    bad = box / "huge.csv"  # a field past the csv module's limit (131072 characters): csv.Error, not a ValueError
    bad.write_bytes(HEADER.encode() + b"s1,T," + b"a" * 200_000 + b",A.,B.,C.,D.\n")
    argv = sample(box)
    argv[argv.index("--data") + 1] = str(bad)
    old = csv.field_size_limit(131072)  # the default (the retrieval reader raises it process-wide for DPR files)
    try:
        code, err = run(argv, capsys)
    finally:
        csv.field_size_limit(old)
    assert code == 2 and f"{bad}:2: not a readable CSV (field larger than field limit" in one_line(err)


@pytest.mark.parametrize("entry, message", [
    ({"limit": -3}, "`limit: -3` must be between 0 and"), ({"limit": 2.5}, "`limit: 2.5` is not a whole number"),
    ({"max_new_tokens": 0}, "`max_new_tokens: 0` must be between 1 and"),
])
def test_leaderboard_options_are_bounded(box, entry, message):
    from megazoo.tasks.story.leaderboard import EVALUATION

    with pytest.raises(ValueError, match=message):
        EVALUATION.run(str(box / "ckpt"), str(box / "data.csv"), entry)
