"""Issue #36 cases of `megazoo task dialogue ...`, run as a user runs them: outputs that would replace
an input, `data` into a folder holding the user's files, bounded numeric flags, undecodable
files named with their line, and generations counted against the data. Every refusal is one line,
exit 2, and leaves every file as it was."""

from __future__ import annotations

import json

import pytest

from tests.cli_helpers import one_line, run_cli, snapshot as digest

TSV = "topic\tHi. [SEP] Tell me about cats.\tCats are mammals.\tCats are small mammals.\n" \
      "topic\tHi.\tno_passages_used\tHello there!\n"


def run(argv, capsys):
    return run_cli(capsys, *argv)


@pytest.fixture
def box(tmp_path):
    (tmp_path / "test.tsv").write_text(TSV)
    (tmp_path / "gen.txt").write_text("Cats are mammals.\nHi!\n")
    (tmp_path / "bystander.txt").write_text("must survive\n")
    return tmp_path


def evaluate(box, out, data=None, generations=None):
    return ["task", "dialogue", "evaluate", "--data", str(data or box / "test.tsv"), "--generations",
            str(generations or box / "gen.txt"), "--out", str(out)]


@pytest.mark.parametrize("which", ["data", "generations"])
def test_evaluate_out_equal_to_an_input_is_refused(box, capsys, which):
    before = digest(box)
    target = box / ("test.tsv" if which == "data" else "gen.txt")
    code, err = run(evaluate(box, target), capsys)
    assert code == 2 and f"is the input --{which}" in one_line(err)
    assert digest(box) == before


def test_evaluate_predictions_beside_out_cannot_be_an_input(box, capsys):
    (box / "e.predictions.jsonl").write_text("{}\n")
    before = digest(box)
    code, err = run(evaluate(box, box / "e.json", generations=box / "e.predictions.jsonl"), capsys)
    assert code == 2 and "e.predictions.jsonl" in one_line(err)
    assert digest(box) == before


@pytest.mark.parametrize("lines", [1, 3])
def test_generations_of_another_length_name_both_files(box, capsys, lines):
    gens = box / "gen.txt"
    gens.write_text("a response\n" * lines)
    before = digest(box)
    code, err = run(evaluate(box, box / "e.json"), capsys)
    line = one_line(err)
    assert code == 2 and str(gens) in line and str(box / "test.tsv") in line
    assert f"{lines} generations but" in line and "has 2 samples" in line
    assert digest(box) == before


def test_flatten_out_equal_to_input_is_refused(box, capsys):
    before = digest(box)
    code, err = run(["task", "dialogue", "flatten", str(box / "test.tsv"), "--out", str(box / "test.tsv")], capsys)
    assert code == 2 and "is the input DATA" in one_line(err)
    assert digest(box) == before


def test_flatten_refuses_an_existing_out_without_overwrite(box, capsys):
    (box / "flat.tsv").write_text("mine\n")
    before = digest(box)
    code, err = run(["task", "dialogue", "flatten", str(box / "test.tsv"), "--out", str(box / "flat.tsv")], capsys)
    assert code == 2 and "exists and is not empty" in one_line(err)
    assert digest(box) == before


@pytest.mark.parametrize("name, content, line", [
    ("test.tsv", b"topic\tHi.\tk\tr\ntopic\tcaf\xe9\tk\tr\n", 2),
    ("test.jsonl", b'{"id": "a", "turns": [{"speaker": "A", "text": "hi"}, {"speaker": "B", "text": "\xff"}]}\n', 1),
    ("test.json", b'[\n {"dialog": [{"speaker": "0_Wizard", "text": "\xc3("}]}\n]\n', 2),
])
def test_undecodable_data_names_file_and_line(box, capsys, name, content, line):
    data = box / name
    data.write_bytes(content)
    code, err = run(["task", "dialogue", "flatten", str(data), "--out", str(box / "flat.tsv")], capsys)
    assert code == 2 and f"{data}:{line}: not valid UTF-8 (byte 0x" in one_line(err)
    assert not (box / "flat.tsv").exists()


def test_undecodable_generations_name_file_and_line(box, capsys):
    gens = box / "gen.txt"
    gens.write_bytes(b"fine\nnot \x80 fine\n")
    code, err = run(evaluate(box, box / "e.json"), capsys)
    assert code == 2 and f"{gens}:2: not valid UTF-8 (byte 0x80 at column 5)" in one_line(err)


def test_undecodable_document_names_file_and_line(tmp_path):
    from megazoo.eval.readers.common import LineError
    from megazoo.tasks.dialogue.knowledge import DocumentSet

    (tmp_path / "a.txt").write_bytes(b"Penguins swim.\nThey \xfe fly.\n")
    with pytest.raises(LineError, match=rf"{tmp_path / 'a.txt'}:2: not valid UTF-8"):
        DocumentSet(tmp_path)


def _fake_generate_all(fail: bool):
    """generate_all writing a minimal set (or failing half-way), so the folder handling runs in a moment."""
    def generate_all(out, seed=0, test="handmade"):
        from megazoo.tasks.dialogue.data import WOW_FILES

        (out / "wow").mkdir(parents=True)
        for name in WOW_FILES:
            (out / "wow" / name).write_text("[]\n")
        if fail:
            raise ValueError("stopped half-way")
        return {"wow": {"dialogues": 0}}
    return generate_all


def test_data_refuses_a_folder_with_user_files(tmp_path, capsys):
    out = tmp_path / "data"
    out.mkdir()
    (out / "mine.txt").write_text("the user's\n")
    before = digest(tmp_path)
    code, err = run(["task", "dialogue", "data", str(out)], capsys)
    assert code == 2 and "exists and is not empty" in one_line(err) and "--overwrite" in err
    assert digest(tmp_path) == before


def test_data_overwrite_replaces_only_once_complete(tmp_path, capsys, monkeypatch):
    import megazoo.tasks.dialogue.generate as generate

    out = tmp_path / "data"
    out.mkdir()
    (out / "mine.txt").write_text("the user's\n")
    before = digest(tmp_path)
    monkeypatch.setattr(generate, "generate_all", _fake_generate_all(fail=True))
    code, err = run(["task", "dialogue", "data", str(out), "--overwrite"], capsys)
    assert code == 2 and "stopped half-way" in one_line(err)
    assert digest(tmp_path) == before  # the old folder intact, no scratch left
    monkeypatch.setattr(generate, "generate_all", _fake_generate_all(fail=False))
    code, err = run(["task", "dialogue", "data", str(out), "--overwrite"], capsys)
    assert code == 0, err
    assert not (out / "mine.txt").exists() and (out / "wow" / "train.tsv").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["data"]


@pytest.mark.parametrize("argv", [
    ["msdp", "--stage", "knowledge", "--limit", "0"], ["msdp", "--stage", "knowledge", "--limit", "-3"],
    ["msdp", "--stage", "knowledge", "--max-new-tokens", "100000"], ["msdp", "--stage", "knowledge", "--seed", "-1"],
    ["msdp", "--stage", "knowledge", "--shots", "5000"], ["msdp", "--stage", "knowledge", "--batch", "0"],
    ["sample", "--kind", "actor", "--reference-turns", "0"], ["sample", "--kind", "actor", "--limit", "-1"],
    ["perplexity", "--kind", "knowledge", "--knowledge-sentences", "100000"],
    ["sample", "--kind", "actor", "--batch", "1e9"],
])
def test_numeric_flags_are_bounded(box, capsys, argv):
    before = digest(box)
    stage, flag = argv[0], argv[-2]
    full = ["task", "dialogue", stage, "--data", str(box / "test.tsv"), "--checkpoint", str(box), "--out",
            str(box / "new.jsonl"), *argv[1:]]
    code, err = run(full, capsys)
    assert code == 2 and f"argument {flag}" in err and "Traceback" not in err
    assert digest(box) == before


def test_chat_history_is_bounded(tmp_path, capsys):
    code, err = run(["task", "dialogue", "chat", str(tmp_path), "--history", "0"], capsys)
    assert code == 2 and "argument --history" in err


def test_data_seed_is_bounded(tmp_path, capsys):
    code, err = run(["task", "dialogue", "data", str(tmp_path / "new"), "--seed", "-1"], capsys)
    assert code == 2 and "argument --seed" in err and not (tmp_path / "new").exists()


def test_msdp_out_equal_to_data_is_refused(box, capsys):
    before = digest(box)
    code, err = run(["task", "dialogue", "msdp", "--stage", "knowledge", "--data", str(box / "test.tsv"),
                     "--checkpoint", str(box / "ckpt"), "--out", str(box / "test.tsv")], capsys)
    assert code == 2 and "is the input --data" in one_line(err)
    assert digest(box) == before


def test_leaderboard_options_are_bounded(box):
    from megazoo.tasks.dialogue.leaderboard import EVALUATION

    with pytest.raises(ValueError, match="`limit: -1` must be between 1 and"):
        EVALUATION.run(str(box), str(box / "test.tsv"), {"limit": -1})
