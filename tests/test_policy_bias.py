"""Issue #36 cases of `megazoo task bias ...`, run as a user runs them: outputs that would replace an
input, the score cache as a declared resumable output, bounded numeric flags, and files that name
themselves (and the line) when they are not UTF-8 or not YAML. Every refusal is one line, exit 2,
and leaves every file as it was."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from megazoo.tasks.bias.generate import shipped_dir
from tests.cli_helpers import one_line, run_cli, snapshot as digest

FIX = Path(__file__).parent / "fixtures" / "bias"


def run(argv, capsys):
    return run_cli(capsys, *argv)


@pytest.fixture
def box(tmp_path):
    """data.csv, support.csv, an (empty) checkpoint folder and a bystander."""
    shutil.copyfile(FIX / "SBIC.v2.tiny.csv", tmp_path / "data.csv")
    shutil.copyfile(shipped_dir() / "SBIC.v2.trn.csv", tmp_path / "support.csv")
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "bystander.txt").write_text("must survive\n")
    return tmp_path


def evaluate(box, *extra, out=None):
    return ["task", "bias", "evaluate", "--data", str(box / "data.csv"), "--support", str(box / "support.csv"),
            "--checkpoint", str(box / "ckpt"), "--out", str(out or box / "r.json"), *extra]


@pytest.mark.parametrize("stage", ["evaluate", "study"])
def test_out_equal_to_data_is_refused(box, capsys, stage):
    before = digest(box)
    argv = evaluate(box, out=box / "data.csv")
    argv[2] = stage
    code, err = run(argv, capsys)
    assert code == 2 and "--out" in one_line(err) and "is the input --data" in err
    assert digest(box) == before


def test_default_cache_is_declared_and_cannot_be_an_input(box, capsys):
    # --out r.json writes its score cache to r.cache.jsonl: here that is the --dev file
    shutil.copyfile(FIX / "SBIC.v2.agg.tiny.csv", box / "r.cache.jsonl")
    before = digest(box)
    code, err = run(evaluate(box, "--dev", str(box / "r.cache.jsonl")), capsys)
    assert code == 2 and "--cache" in one_line(err) and "is the input --dev" in err
    assert digest(box) == before


def test_explicit_cache_cannot_be_an_input(box, capsys):
    before = digest(box)
    code, err = run(evaluate(box, "--cache", str(box / "support.csv")), capsys)
    assert code == 2 and "--cache" in one_line(err) and "is the input --support" in err
    assert digest(box) == before


def test_predictions_beside_out_cannot_be_an_input(box, capsys):
    shutil.copyfile(box / "data.csv", box / "r.predictions.jsonl")
    before = digest(box)
    code, err = run(evaluate(box, "--dev", str(box / "r.predictions.jsonl")), capsys)
    assert code == 2 and "r.predictions.jsonl" in one_line(err)
    assert digest(box) == before


def test_an_existing_cache_is_continued_not_refused(box, capsys):
    # the cache is resumable: an earlier run's cache beside a new --out is not "an existing output"
    (box / "r.cache.jsonl").write_text('{"key": "k", "yes": -1.0, "no": -2.0}\n')
    before = digest(box)
    code, err = run(evaluate(box, "--shots", "2", "--selection", "random"), capsys)  # the empty checkpoint fails
    assert code == 2 and "exists and is not empty" not in err and "ckpt" in one_line(err)
    assert digest(box) == before


def test_an_existing_out_is_refused_without_overwrite(box, capsys):
    (box / "r.json").write_text("my results\n")
    before = digest(box)
    code, err = run(evaluate(box), capsys)
    assert code == 2 and "exists and is not empty" in one_line(err) and "--overwrite" in err
    assert digest(box) == before


def test_a_file_that_is_not_a_cache_is_not_appended_to(tmp_path):
    from megazoo.tasks.bias.scoring import ScoreCache

    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    with pytest.raises(ValueError, match=rf"{notes}:1: not a score cache line"):
        ScoreCache(notes)
    assert notes.read_text() == "my notes\n"


def test_a_cut_cache_line_is_skipped_and_the_next_entry_starts_a_new_line(tmp_path):
    from megazoo.tasks.bias.scoring import ScoreCache

    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"key": "a", "yes": -1.0, "no": -2.0}\n{"key": "b", "ye')
    cache = ScoreCache(path)
    assert set(cache.entries) == {"a"}
    cache.add([("c", -3.0, -4.0)])
    assert set(ScoreCache(path).entries) == {"a", "c"}


@pytest.mark.parametrize("flag, value", [
    ("--max-length", "-5"), ("--max-length", "0"), ("--max-length", str(2**21)), ("--max-length", "nan"),
    ("--shots", "-1"), ("--shots", "100000"), ("--bootstrap", "0"), ("--bootstrap", "1e9"),
    ("--bootstrap", "1000000000"), ("--batch", "0"), ("--batch", "100000000"), ("--tp", "0"), ("--pp", "1000"),
    ("--seed", "-1"), ("--seed", str(2**40)),
])
def test_numeric_flags_are_bounded(box, capsys, flag, value):
    before = digest(box)
    code, err = run(evaluate(box, flag, value), capsys)
    assert code == 2 and f"argument {flag}" in err and "Traceback" not in err
    assert digest(box) == before


@pytest.mark.parametrize("value", ["0", "20000000", "x"])
def test_study_sizes_are_bounded(box, capsys, value):
    argv = evaluate(box, "--sizes", value)
    argv[2] = "study"
    code, err = run(argv, capsys)
    assert code == 2 and "--sizes" in one_line(err)


def test_study_shots_are_bounded(box, capsys):
    argv = evaluate(box, "--shots", "2,100000")
    argv[2] = "study"
    code, err = run(argv, capsys)
    assert code == 2 and "--shots: every k must be at most 256" in one_line(err)


@pytest.mark.parametrize("which", ["--data", "--support", "--dev"])
def test_undecodable_csv_names_file_and_line(box, capsys, which):
    bad = box / "bad.csv"
    lines = (box / "data.csv").read_bytes().split(b"\n")
    lines[2] = lines[2] + b" \xff\xfe"
    bad.write_bytes(b"\n".join(lines))
    argv = evaluate(box)
    if which == "--dev":
        argv += ["--dev", str(bad)]
    else:
        argv[argv.index(which) + 1] = str(bad)
    code, err = run(argv, capsys)
    line = one_line(err)
    assert code == 2 and f"{bad}:3: not valid UTF-8 (byte 0xff" in line, line


def test_prompts_yaml_error_names_the_file(box, capsys):
    prompts = box / "my-prompts.yaml"
    prompts.write_text("header: ok\nexemplar: [unclosed\n")
    code, err = run(evaluate(box, "--prompts", str(prompts)), capsys)
    line = one_line(err)
    assert code == 2 and f"{prompts}:" in line and "not valid YAML" in line and "a YAML file" not in line


def test_prompts_not_utf8_names_file_and_line(box, capsys):
    prompts = box / "my-prompts.yaml"
    prompts.write_bytes(b"header: ok\nquery: caf\xe9\n")
    code, err = run(evaluate(box, "--prompts", str(prompts)), capsys)
    assert code == 2 and f"{prompts}:2: not valid UTF-8 (byte 0xe9 at column 11)" in one_line(err)


@pytest.mark.parametrize("text", ["- a list\n", "header: '{nope}'\nexemplar: x\nquery: y\nseparator: z\n"
                                  "answers: {yes: ' Yes', no: ' No'}\ncategories: {offensive: {question: q}}\n"])
def test_prompts_of_a_wrong_shape_are_one_line(box, capsys, text):
    prompts = box / "my-prompts.yaml"
    prompts.write_text(text)
    code, err = run(evaluate(box, "--prompts", str(prompts)), capsys)
    assert code == 2 and str(prompts) in one_line(err)


def test_data_refuses_an_existing_folder_and_replaces_it_only_with_overwrite(tmp_path, capsys):
    out = tmp_path / "set"
    out.mkdir()
    (out / "mine.txt").write_text("the user's\n")
    code, err = run(["task", "bias", "data", str(out)], capsys)
    assert code == 2 and "exists and is not empty" in one_line(err)
    assert (out / "mine.txt").read_text() == "the user's\n"
    code, err = run(["task", "bias", "data", str(out), "--overwrite"], capsys)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in shipped_dir().glob("SBIC.v2.*.csv"))
    assert [p.name for p in tmp_path.iterdir()] == ["set"]  # no scratch or moved-aside folder left


def test_max_length_past_the_models_context_is_one_line(box, capsys):
    from tests.test_eval_leaderboard import _tiny_hf_gpt2

    hf = _tiny_hf_gpt2(box / "hf", seed=0)
    argv = evaluate(box, "--max-length", "100000", "--shots", "0")
    argv[argv.index("--checkpoint") + 1] = str(hf)
    code, err = run(argv, capsys)
    last = err.strip().splitlines()[-1]  # after transformers' own progress bar
    assert code == 2 and "Traceback" not in err
    assert last.startswith("megazoo task bias evaluate: error: --max-length 100000 is longer than the model's context")
    assert not (box / "r.json").exists()


@pytest.mark.parametrize("entry, message", [
    ({"max_length": -5}, "`max_length: -5` must be between 8 and"), ({"shots": -1}, "`shots: -1` must be between"),
    ({"seed": "x"}, "`seed: 'x'` is not a whole number"),
])
def test_leaderboard_options_are_bounded(box, entry, message):
    from megazoo.tasks.bias.leaderboard import EVALUATION

    with pytest.raises(ValueError, match=message):
        EVALUATION.run(str(box / "ckpt"), str(box / "data.csv"), {"fewshot_path": str(box / "support.csv"), **entry})
