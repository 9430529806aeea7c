"""Every native reader also takes the same data as a Hugging Face dataset (issue #38, point 2): a
save_to_disk folder (one split, or a DatasetDict with @SPLIT), parquet and an arrow stream file, all made
here with `datasets`, give the examples the native file gives; bad inputs fail with one line."""

import json
import os
import shutil

import pytest

datasets = pytest.importorskip("datasets")

from megazoo.eval.readers.common import ReaderError  # noqa: E402
from megazoo.eval.readers.hf_source import RowError, is_hf_source  # noqa: E402
from megazoo.tasks.biomed.data import read_split, read_squad_json  # noqa: E402
from megazoo.tasks.race.data import load_race, read_race_dir  # noqa: E402
from megazoo.tasks.retrieval.data import (iter_passages, read_dpr_json, read_passages, read_qas,  # noqa: E402
                                          RetrievalFormatError)
from megazoo.tasks.synthetic_qa.squad import SquadFormatError, read_squad  # noqa: E402
from tests.test_race_data import FIXTURE, _hf_rows  # noqa: E402

FORMS = ("disk", "dict", "parquet", "arrow")


def _write(tmp_path, rows, form, name="data"):
    """The rows as one HF form; "dict" is a DatasetDict folder whose validation split holds them."""
    ds = datasets.Dataset.from_list(rows)
    if form == "parquet":
        ds.to_parquet(str(tmp_path / f"{name}.parquet"))
        return tmp_path / f"{name}.parquet"
    if form == "dict":
        other = datasets.Dataset.from_list(rows[:1])
        datasets.DatasetDict({"train": other, "validation": ds}).save_to_disk(str(tmp_path / f"{name}_dict"))
        return f"{tmp_path / f'{name}_dict'}@validation"
    ds.save_to_disk(str(tmp_path / f"{name}_disk"))
    if form == "disk":
        return tmp_path / f"{name}_disk"
    shutil.copy(next((tmp_path / f"{name}_disk").glob("*.arrow")), tmp_path / f"{name}.arrow")
    return tmp_path / f"{name}.arrow"


# ---- RACE -------------------------------------------------------------------------------------

@pytest.mark.parametrize("form", FORMS)
def test_race(tmp_path, form):
    path = _write(tmp_path, _hf_rows("test"), form)
    key = [(q.uid, q.article, q.question, q.options, q.label, q.level) for q in read_race_dir(FIXTURE, "test")]
    assert is_hf_source(path)
    assert [(q.uid, q.article, q.question, q.options, q.label, q.level) for q in load_race(path, "test")] == key


def test_race_dict_folder_takes_the_package_split(tmp_path):
    datasets.DatasetDict({"validation": datasets.Dataset.from_list(_hf_rows("dev")),
                          "test": datasets.Dataset.from_list(_hf_rows("test"))}).save_to_disk(str(tmp_path / "race"))
    assert [q.uid for q in load_race(tmp_path / "race", "dev")] == [q.uid for q in read_race_dir(FIXTURE, "dev")]
    with pytest.raises(RowError, match="holds the splits validation, test; name one"):
        load_race(tmp_path / "race")


# ---- SQuAD ------------------------------------------------------------------------------------

CONTEXTS = ["The cat sat on the mat in 1999.", "Paris is the capital of France.", "Water boils at 100 degrees."]


def _squad(v2: bool):
    """A native SQuAD file's dict and the same questions as Hub `squad`/`squad_v2` rows."""
    qas = [[("q1", "Where did the cat sit?", [("the mat", 15), ("mat", 19)]),
            ("q2", "When?", [("1999", 26)])],
           [("q3", "What is the capital of France?", [("Paris", 0)])],
           [("q4", "At what does water boil?", [("100 degrees", 15)])]]
    if v2:
        qas[1].append(("q5", "What is the capital of Mars?", []))
    titles = ["Cats", "Cities", "Cities"]
    data, rows = [], []
    for title, context, questions in zip(titles, CONTEXTS, qas):
        native_qas = []
        for uid, question, answers in questions:
            native_qas.append({"id": uid, "question": question,
                               "answers": [{"text": t, "answer_start": s} for t, s in answers]})
            if v2:
                native_qas[-1]["is_impossible"] = not answers
            rows.append({"id": uid, "title": title, "context": context, "question": question,
                         "answers": {"text": [t for t, _ in answers], "answer_start": [s for _, s in answers]}})
        if data and data[-1]["title"] == title:
            data[-1]["paragraphs"].append({"context": context, "qas": native_qas})
        else:
            data.append({"title": title, "paragraphs": [{"context": context, "qas": native_qas}]})
    return {"version": "v2.0" if v2 else "1.1", "data": data}, rows


def _squad_key(f):
    return f.version, f.paragraphs, [(q.id, q.question, q.context, q.answers, q.is_impossible, q.title, q.paragraph)
                                     for q in f.questions]


@pytest.mark.parametrize("v2", [False, True], ids=["v1.1", "v2.0"])
@pytest.mark.parametrize("form", FORMS)
def test_squad(tmp_path, form, v2):
    native, rows = _squad(v2)
    (tmp_path / "dev.json").write_text(json.dumps(native))
    path = _write(tmp_path, rows, form)
    want = read_squad(tmp_path / "dev.json")
    got = read_squad(path)
    assert _squad_key(got) == _squad_key(want)
    assert got.v2 is v2 and any(q.is_impossible for q in got.questions) is v2
    # the BioASQ / SQuAD-v1.1 reader of biomed reads the same rows
    key = [(q.id, q.question, q.context, q.answers, q.answer_start, q.answer_text)
           for q in read_squad_json(tmp_path / "dev.json")]
    assert [(q.id, q.question, q.context, q.answers, q.answer_start, q.answer_text)
            for q in read_squad_json(path)] == key
    assert [q.id for q in read_split(path, "qa", "dev")] == [q.id for q in read_squad_json(tmp_path / "dev.json")]


def test_squad_row_error_names_file_and_row(tmp_path):
    _, rows = _squad(False)
    rows[1]["answers"]["answer_start"] = [3]
    path = _write(tmp_path, rows, "parquet")
    with pytest.raises(SquadFormatError, match="answer_start 3 does not point at the answer") as err:
        read_squad(path)
    assert str(err.value).startswith(f"{path}: row 2: ")


# ---- NQ: DPR's json columns, nq_open, passages ----------------------------------------------------

def _ctx(n, title="T"):
    return {"title": f"{title}{n}", "text": f"passage text {n}", "score": 1.5, "title_score": 0, "passage_id": str(n)}


DPR_ITEMS = [
    {"question": "who wrote hamlet ", "answers": ["Shakespeare", "William Shakespeare"],
     "positive_ctxs": [_ctx(1)], "negative_ctxs": [_ctx(2), _ctx(3)], "hard_negative_ctxs": [_ctx(4)]},
    {"question": "capital of france", "answers": ["Paris"],
     "positive_ctxs": [_ctx(5), _ctx(6)], "negative_ctxs": [], "hard_negative_ctxs": [_ctx(7)]},
]


def _questions(qs):
    return [(q.question, q.answers, q.positives, q.negatives, q.hard_negatives) for q in qs]


@pytest.mark.parametrize("form", FORMS)
def test_dpr_questions(tmp_path, form):
    (tmp_path / "nq-dev.json").write_text(json.dumps(DPR_ITEMS))
    path = _write(tmp_path, DPR_ITEMS, form)
    want = _questions(read_dpr_json(tmp_path / "nq-dev.json"))
    assert _questions(read_dpr_json(path)) == want
    assert _questions(read_qas(path)) == _questions(read_qas(tmp_path / "nq-dev.json")) == want


@pytest.mark.parametrize("form", FORMS)
def test_nq_open_questions(tmp_path, form):
    rows = [{"question": "who wrote hamlet", "answer": ["Shakespeare", "William Shakespeare"]},
            {"question": "capital of france", "answer": ["Paris"]}]
    (tmp_path / "nq-test.csv").write_text("".join(f"{r['question']}\t{r['answer']!r}\n" for r in rows))
    path = _write(tmp_path, rows, form)
    assert _questions(read_qas(path)) == _questions(read_qas(tmp_path / "nq-test.csv"))
    assert [q.answers for q in read_qas(path)] == [r["answer"] for r in rows]


@pytest.mark.parametrize("form", FORMS)
def test_passages(tmp_path, form):
    rows = [{"id": str(i), "text": f"text of passage {i}, with a comma", "title": f"Title {i}"} for i in (1, 2, 10)]
    (tmp_path / "psgs.tsv").write_text("id\ttext\ttitle\n" + "".join(f"{r['id']}\t{r['text']}\t{r['title']}\n"
                                                                    for r in rows))
    path = _write(tmp_path, rows, form)
    want = read_passages(tmp_path / "psgs.tsv")
    assert read_passages(path) == want and list(iter_passages(path)) == want
    assert [p.id for p in want] == [1, 2, 10]


# ---- bad input ----------------------------------------------------------------------------------

def test_missing_column_names_the_column_file_and_schema(tmp_path):
    _, rows = _squad(False)
    for r in rows:
        del r["context"]
    path = _write(tmp_path, rows, "parquet")
    with pytest.raises(SquadFormatError) as err:
        read_squad(path)
    message = str(err.value)
    assert message.startswith(f"{path}: has no column 'context'") and "`squad`" in message and "\n" not in message
    passages = _write(tmp_path, [{"id": "1", "text": "t"}], "disk", "psgs")
    with pytest.raises(RetrievalFormatError, match="has no column 'title' \\(expected the Hugging Face `wiki_dpr`"):
        read_passages(passages)


def test_hub_id_offline_is_one_line(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(ReaderError) as err:
        read_squad("hf:megazoo-test-no-such-dataset@validation")
    message = str(err.value)
    assert message.startswith("hf:megazoo-test-no-such-dataset")
    assert "offline" in message and "save_to_disk" in message and "\n" not in message
    assert isinstance(err.value, ValueError)  # the CLI boundary: one line, exit code 2


def test_empty_split(tmp_path):
    _, rows = _squad(False)
    ds = datasets.Dataset.from_list(rows)
    # select([]) is saved with no shard at all, filter() with an empty one: both are an empty split
    datasets.DatasetDict({"train": ds, "validation": ds.select([]), "test": ds.filter(lambda r: False)}
                         ).save_to_disk(str(tmp_path / "squad"))
    for split in ("validation", "test"):
        with pytest.raises(SquadFormatError, match=f"squad@{split}: holds no rows \\(expected the Hugging Face"):
            read_squad(f"{tmp_path / 'squad'}@{split}")
    assert len(read_squad(f"{tmp_path / 'squad'}@train").questions) == len(rows)
    ds.filter(lambda r: False).to_parquet(str(tmp_path / "empty.parquet"))
    with pytest.raises(RetrievalFormatError, match="empty.parquet: holds no rows"):
        read_qas(tmp_path / "empty.parquet")


def test_native_files_are_not_hf_sources(tmp_path):
    (tmp_path / "dev.json").write_text("{}")
    os.makedirs(tmp_path / "folder")
    assert not is_hf_source(tmp_path / "dev.json") and not is_hf_source(tmp_path / "folder")
    assert not is_hf_source(FIXTURE) and is_hf_source("hf:squad")


def test_cli_inputs_let_hf_sources_through(tmp_path):
    import argparse

    from megazoo.core.fs import declared, input_arg
    from megazoo.tasks.synthetic_qa.cli_common import need_file

    parser = argparse.ArgumentParser()
    input_arg(parser, "--data", kind="file", hf=True, help="a SQuAD file")
    input_arg(parser, "--other", kind="file", help="a file")
    assert "hf:NAME" in parser.format_help()
    args = parser.parse_args(["--data", "hf:squad@validation", "--other", "hf:x"])
    assert [d.label for d in declared(parser, args)] == ["--other"]  # a Hub id is not a path
    path = _write(tmp_path, _squad(False)[1], "disk")
    assert need_file(path, "--data") == path and need_file("hf:squad", "--data") == "hf:squad"
    with pytest.raises(FileNotFoundError, match="--data .*nope.json: no such file"):
        need_file(tmp_path / "nope.json", "--data")
