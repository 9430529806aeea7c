"""RACE readers (original and Hugging Face layouts), their errors, and the generated set."""

import json
import shutil
from pathlib import Path

import pytest

from megazoo.eval.readers.common import ReaderError
from megazoo.tasks.race.data import RaceFormatError, load_race, read_hf_race, read_race_dir
from megazoo.tasks.race.generate import generate_race

FIXTURE = Path(__file__).parent / "fixtures" / "race" / "RACE"


def test_original_layout_reader():
    train = read_race_dir(FIXTURE, "train")
    assert len(train) == 5
    assert {q.level for q in train} == {"middle", "high"}
    assert len({q.uid for q in train}) == 5
    q = next(q for q in train if q.question.startswith("Lena waters"))
    assert q.label == 1 and q.options[1] == "before school" and q.level == "middle"
    assert q.uid == "middle/middle1.txt#0"
    test = load_race(FIXTURE, "test")
    assert [q.label for q in test if q.level == "high"] == [1, 2]
    # a split folder, or a level folder, can be passed directly
    assert len(read_race_dir(FIXTURE / "test")) == 4
    assert [q.level for q in read_race_dir(FIXTURE / "test" / "high")] == ["high", "high"]


def test_root_without_split_is_refused():
    with pytest.raises(ValueError, match="name one"):
        read_race_dir(FIXTURE)
    with pytest.raises(FileNotFoundError, match="no such split folder"):
        read_race_dir(FIXTURE, "valid")


def _hf_rows(split):
    rows = []
    for q in read_race_dir(FIXTURE, split):
        rows.append({"example_id": q.doc_id, "article": q.article,
                     "answer": "ABCD"[q.label], "question": q.question, "options": list(q.options)})
    return rows


def test_hf_layout_parquet_and_json(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("datasets")
    root = tmp_path / "race" / "all"
    root.mkdir(parents=True)
    pd.DataFrame(_hf_rows("test")).to_parquet(root / "test-00000-of-00001.parquet")
    pd.DataFrame(_hf_rows("train")).to_parquet(root / "train-00000-of-00001.parquet")
    with open(tmp_path / "dev.jsonl", "w") as f:
        for r in _hf_rows("dev"):
            f.write(json.dumps(r) + "\n")
    hf = load_race(tmp_path / "race", "test")
    orig = read_race_dir(FIXTURE, "test")
    assert [(q.question, q.options, q.label, q.level, q.uid) for q in hf] == \
           [(q.question, q.options, q.label, q.level, q.uid) for q in orig]
    assert len(read_hf_race(tmp_path / "race", "train")) == 5
    assert [(q.level, q.label) for q in load_race(tmp_path / "dev.jsonl")] == [("high", 2), ("middle", 1)]


@pytest.mark.parametrize("edit, message", [
    (lambda r: r["options"][0].pop(), "options\\[0\\] must be a list of 4 strings"),
    (lambda r: r["answers"].__setitem__(0, "E"), "answers\\[0\\] must be a letter A-D, got 'E'"),
    (lambda r: r.pop("article"), "missing field 'article'"),
    (lambda r: r.pop("answers"), "missing field 'answers'"),
    (None, "not valid JSON"),
])
def test_original_layout_bad_input_names_the_file(tmp_path, edit, message):
    shutil.copytree(FIXTURE, tmp_path / "RACE")
    bad = tmp_path / "RACE" / "dev" / "middle" / "1.txt"
    if edit is None:
        bad.write_text('{"article": "no closing brace"\n')
    else:
        record = json.loads(bad.read_text())
        edit(record)
        bad.write_text(json.dumps(record) + "\n")
    with pytest.raises(ReaderError, match=message) as err:
        load_race(tmp_path / "RACE", "dev")
    assert str(bad) in str(err.value) and "line 1" in str(err.value)


@pytest.mark.parametrize("edit, message", [
    (lambda r: r["options"].pop(), "options has 3 options; RACE questions need exactly 4"),
    (lambda r: r.__setitem__("answer", "F"), "answer 'F' is not one of the letters A, B, C, D"),
    (lambda r: r.pop("question"), "missing field 'question'"),
])
def test_hf_layout_bad_input_names_the_file(tmp_path, edit, message):
    pytest.importorskip("datasets")
    rows = _hf_rows("test")
    edit(rows[1])
    path = tmp_path / "test.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(RaceFormatError, match=message) as err:
        load_race(path)
    assert str(path) in str(err.value)
    if "missing" not in message:
        assert "line 2" in str(err.value)


def test_hf_layout_file_that_is_not_json(tmp_path):
    pytest.importorskip("datasets")
    path = tmp_path / "test.json"
    path.write_text("this is not json at all\n")
    with pytest.raises(RaceFormatError, match="not readable as json") as err:
        load_race(path)
    assert str(path) in str(err.value)


def test_generated_set_is_deterministic_and_readable(tmp_path):
    sizes = {"train": 8, "dev": 4, "test": 4}
    counts = generate_race(tmp_path / "a", seed=3, articles=sizes, article_words=60)
    generate_race(tmp_path / "b", seed=3, articles=sizes, article_words=60)
    generate_race(tmp_path / "c", seed=4, articles=sizes, article_words=60)
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.txt"))
    assert files_a == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*.txt"))
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files_a)
    assert any((tmp_path / "a" / f).read_bytes() != (tmp_path / "c" / f).read_bytes()
               for f in files_a if (tmp_path / "c" / f).exists())
    for split in sizes:
        for level in ("middle", "high"):
            assert len(list((tmp_path / "a" / split / level).glob("*.txt"))) == sizes[split] // 2
    splits = {s: load_race(tmp_path / "a", s) for s in sizes}
    assert {s: {lv: sum(q.level == lv for q in qs) for lv in ("middle", "high")} for s, qs in splits.items()} == counts
    for qs in splits.values():
        for q in qs:
            answer = q.options[q.label]
            assert len(set(o.lower() for o in q.options)) == 4
            assert all(o.lower() in q.article.lower() for o in q.options)  # distractors from the same article
            if "_" in q.question:  # a cloze question filled with the answer is a sentence of the article
                assert q.question.replace("_", answer) in q.article
            else:
                assert q.question.startswith("Which word follows")
    # held-out articles are unseen in training
    train_articles = {q.article for q in splits["train"]}
    assert not train_articles & {q.article for q in splits["test"] + splits["dev"]}
    assert any("_" not in q.question for q in splits["train"] if q.level == "high")
    assert all("_" in q.question for q in splits["train"] if q.level == "middle")
