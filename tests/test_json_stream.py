"""The streamed JSON array reader (eval/readers/json_stream.py) and the two readers ported onto it, DPR's
nq-*.json and Wizard of Wikipedia's: a .gz file gives the same items, the generators yield lazily, and
bad input keeps one line naming the file and the item (or the line, where the error path can tell it):
a truncated array, an item that is not an object, non-UTF-8 bytes, a file that is not an array."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from megazoo.eval.readers.common import LineError
from megazoo.eval.readers.json_stream import ItemError, array_items
from megazoo.tasks.dialogue.data import iter_wow, read_any, read_wow
from megazoo.tasks.retrieval.data import (RetrievalFormatError, iter_dpr_json, read_dpr_json, read_qas)
from tests.cli_helpers import one_line, run_cli

FIX = Path(__file__).parent / "fixtures"
NQ, WOW = FIX / "retrieval" / "nq-train.json", FIX / "dialogue" / "wow.json"


def _questions(qs):
    return [(q.question, q.answers, q.positives, q.negatives, q.hard_negatives) for q in qs]


def _samples(ss):
    return [(s.topic, s.turns, s.knowledge, s.response, s.item) for s in ss]


def test_items_numbered_from_one_floats_not_decimal_bom_skipped(tmp_path):
    path = tmp_path / "a.json"
    path.write_bytes(b"\xef\xbb\xbf \n [1.5, {\"x\": [2, 0.25]}, \"s\"]\n")
    assert list(array_items(path, "numbers")) == [(1, 1.5), (2, {"x": [2, 0.25]}), (3, "s")]
    assert type(list(array_items(path, "numbers"))[0][1]) is float


@pytest.mark.parametrize("name", ["nq-train.json.gz", "nq-train.json"])  # gzip is known by its bytes, not its name
def test_gz_file_gives_the_same_items(tmp_path, name):
    gz = tmp_path / name
    gz.write_bytes(gzip.compress(NQ.read_bytes()))
    assert _questions(read_dpr_json(gz)) == _questions(read_dpr_json(NQ)) != []
    wow = tmp_path / name.replace("nq-train", "train")
    wow.write_bytes(gzip.compress(WOW.read_bytes()))
    assert _samples(read_wow(wow)) == _samples(read_wow(WOW)) != []
    assert _samples(read_any(wow)) == _samples(read_wow(WOW))
    assert _questions(read_qas(gz)) == _questions(read_dpr_json(NQ, need_positive=False))


def test_truncated_array_names_file_line_and_item(tmp_path):
    text = NQ.read_text()
    cut = text.index('"question"', text.index('"question"', text.index('"question"') + 1) + 1)  # in item 3
    path = tmp_path / "nq-train.json"
    path.write_text(text[:cut] + "\n\n")
    with pytest.raises(RetrievalFormatError) as err:
        read_dpr_json(path)
    last = text[:cut].rstrip().count("\n") + 1  # the line where the text stops
    assert str(err.value) == f"{path}:{last}: not valid JSON after item 2 (parse error: premature EOF)"
    gz = tmp_path / "nq-train.json.gz"  # a .gz cut short is named too
    gz.write_bytes(gzip.compress(text.encode())[:-40])
    with pytest.raises(RetrievalFormatError, match=rf"^{gz}: not a readable gzip file after item \d+ \("):
        read_dpr_json(gz)


def test_item_that_is_not_an_object(tmp_path):
    path = tmp_path / "nq.json"
    item = json.loads(NQ.read_text())[0]
    path.write_text(json.dumps([item, [item]]))
    with pytest.raises(RetrievalFormatError) as err:  # the package's class still catches it
        read_dpr_json(path)
    assert str(err.value) == f"{path}: item 2: the item is not a JSON object (got list)"
    assert isinstance(err.value, ItemError) and err.value.item == 2
    wow = tmp_path / "train.json"
    wow.write_text(json.dumps([json.loads(WOW.read_text())[0], "dialogue"]))
    with pytest.raises(ItemError) as err:
        read_wow(wow)
    assert str(err.value) == f"{wow}: item 2: dialogue 2 must be a JSON object, got str"


def test_non_utf8_bytes_name_line_and_column(tmp_path):
    data = WOW.read_bytes()
    at = data.index(b"How big is it?") + 4
    path = tmp_path / "train.json"
    path.write_bytes(data[:at] + b"\xff" + data[at:])
    line = data.count(b"\n", 0, at) + 1
    column = at - data.rfind(b"\n", 0, at)
    expected = f"not valid UTF-8 (byte 0xff at column {column}); save the file as UTF-8"
    with pytest.raises(LineError) as err:
        read_wow(path)
    assert str(err.value) == f"{path}:{line}: {expected}"
    gz = tmp_path / "train.json.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    with pytest.raises(LineError) as err:
        read_wow(gz)
    assert str(err.value) == f"{gz}:{line}: {expected}"


def test_generators_yield_before_a_later_syntax_error(tmp_path):
    item = json.loads(NQ.read_text())[0]
    path = tmp_path / "nq.json"
    path.write_text("[" + json.dumps(item) + ",\n" + json.dumps(item).replace('"answers":', '"answers"') + "]")
    questions = iter_dpr_json(path)
    assert next(questions).question == item["question"]  # the first item, before the error is met
    with pytest.raises(RetrievalFormatError) as err:
        next(questions)
    assert str(err.value).startswith(f"{path}:2: not valid JSON after item 1 (parse error: object key and value ")
    dialogues = json.loads(WOW.read_text())
    wow = tmp_path / "train.json"
    broken = json.dumps(dialogues[1]).replace('"dialog":', '"dialog"')
    wow.write_text("[" + json.dumps(dialogues[0]) + ",\n" + broken + "]")
    samples = iter_wow(wow)
    assert [next(samples).item, next(samples).item] == [1, 1]
    with pytest.raises(LineError, match=rf"^{wow}:2: not valid JSON after item 1 \(parse error: "):
        next(samples)


def test_error_without_a_known_line_names_the_item(tmp_path):
    # the text around the error also stands inside a string of item 1, so where yajl stopped is ambiguous
    run = ", ".join(["0"] * 40) + " 0, " + ", ".join(["0"] * 40)
    path = tmp_path / "a.json"
    path.write_text(f'["{run}",\n[{run}]]')
    with pytest.raises(ItemError) as err:
        list(array_items(path, "lists"))
    assert str(err.value) == (f"{path}: not valid JSON after item 1 (parse error: after array element, "
                              f"I expect ',' or ']')")


@pytest.mark.parametrize("content, message", [
    (b"", "1: the file is empty (expected lists)"),
    (b"\n  \n", "3: the file is empty (expected lists)"),
    (b'\n{"a": 1}', "2: expected a JSON array (lists), found '{'"),
    (b"[1, 2] [3]", "1: not valid JSON after item 2 (parse error: trailing garbage)"),
])
def test_not_an_array(tmp_path, content, message):
    path = tmp_path / "a.json"
    path.write_bytes(content)
    with pytest.raises(LineError) as err:
        list(array_items(path, "lists"))
    assert str(err.value) == f"{path}:{message}"


def test_missing_file_and_the_command_line(tmp_path, capsys):
    with pytest.raises(FileNotFoundError, match=r"nq\.json: no such file \(expected a DPR nq-\*\.json file"):
        read_dpr_json(tmp_path / "nq.json")
    wow = tmp_path / "test.json"
    wow.write_text(json.dumps([{"chosen_topic": "a"}]))
    code, err = run_cli(capsys, "task", "dialogue", "flatten", str(wow), "--out", str(tmp_path / "flat.tsv"))
    assert code == 2 and one_line(err).endswith(f'{wow}: item 1: dialogue 1 has no "dialog" (the list of turns)')
    assert not (tmp_path / "flat.tsv").exists()
