"""Issue #36 for `megazoo task retrieval ...`, as a user runs the commands: nothing the command did
not make is lost (data onto `..`, `box/sub/..`, an existing folder, a sibling named OUT.tmp;
evaluate onto its --qas; index onto an existing index), a failed run leaves the old output, readers
name file and line for undecodable text, every numeric flag is bounded, and every refusal is one
line with exit code 2."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.cli_helpers import refused as _refused, run_cli, snapshot


def run(capsys, *argv: str) -> tuple[int, str]:
    code, err = run_cli(capsys, "task", "retrieval", *argv)
    assert "Traceback" not in err
    return code, err.strip()


def refused(capsys, root: Path, *argv: str) -> str:
    return _refused(capsys, root, "task", "retrieval", *argv)


@pytest.fixture
def small_corpus(monkeypatch):
    """`data` on three short documents (the policy, not the corpus, is under test: fast)."""
    import megazoo.tasks.retrieval.generate as gen

    docs = [(f"Doc {i}", [f"The river Alpha{i} flows through Betatown in 19{i}0 carrying boats.",
                          f"Many people in Betatown fish in the Alpha{i} river every summer."]) for i in range(3)]
    monkeypatch.setattr(gen, "_documents", lambda corpus: docs)


@pytest.fixture
def box(tmp_path):
    (tmp_path / "box" / "inner").mkdir(parents=True)
    (tmp_path / "box" / "mine.txt").write_text("the user's file\n")
    (tmp_path / "box" / "inner" / "notes.txt").write_text("where the user stands\n")
    return tmp_path / "box"


# ---- data ----------------------------------------------------------------------------------------

def test_generate_dotdot_from_inside_is_refused(box, capsys, monkeypatch):
    monkeypatch.chdir(box / "inner")
    for extra in ([], ["--overwrite"]):
        err = refused(capsys, box.parent, "data", "..", *extra)
        assert "data: error: OUT .. is or contains" in err and "nothing was changed" in err


def test_generate_box_sub_dotdot_is_refused_without_errno(box, capsys):
    (box / "sub").mkdir()
    err = refused(capsys, box.parent, "data", f"{box}/sub/..")
    assert "exists and is not empty" in err and "--overwrite" in err and "Errno" not in err


def test_generate_into_an_existing_folder_refused_then_replaced_with_overwrite(tmp_path, capsys, small_corpus):
    out = tmp_path / "data"
    out.mkdir()
    (out / "mine.txt").write_text("the user's own file\n")
    sibling = tmp_path / "data.tmp"  # the old scratch name: now somebody else's folder
    sibling.mkdir()
    (sibling / "keep.txt").write_text("not the command's\n")
    err = refused(capsys, tmp_path, "data", str(out), "--corpus", "stdlib")
    assert f"OUT {out} exists and is not empty" in err
    code, err = run(capsys, "data", str(out), "--corpus", "stdlib", "--overwrite")
    assert code == 0, err
    assert (out / "psgs_w100.tsv").is_file() and not (out / "mine.txt").exists()
    assert (sibling / "keep.txt").read_text() == "not the command's\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "data.tmp"]  # no scratch left behind


def test_generate_beside_a_folder_named_like_its_old_scratch(tmp_path, capsys, small_corpus):
    sibling = tmp_path / "data.tmp"
    sibling.mkdir()
    (sibling / "keep.txt").write_text("the user's\n")
    code, err = run(capsys, "data", str(tmp_path / "data"), "--corpus", "stdlib")
    assert code == 0, err
    assert (sibling / "keep.txt").read_text() == "the user's\n"
    assert (tmp_path / "data" / "nq-test.csv").is_file()


def test_a_failed_generate_keeps_the_old_folder_and_leaves_no_scratch(tmp_path, capsys, monkeypatch, small_corpus):
    import megazoo.tasks.retrieval.generate as gen

    out = tmp_path / "data"
    out.mkdir()
    (out / "mine.txt").write_text("old content\n")

    def broken(*a, **kw):
        raise ValueError("the tokenizer broke")

    monkeypatch.setattr(gen, "write_ict_data", broken)
    before = snapshot(tmp_path)
    code, err = run(capsys, "data", str(out), "--corpus", "stdlib", "--overwrite")
    assert code == 2 and err.endswith("error: the tokenizer broke")
    assert snapshot(tmp_path) == before


# ---- evaluate and index --------------------------------------------------------------------------

@pytest.fixture
def data(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    (d / "psgs.tsv").write_text("id\ttext\ttitle\n1\tParis is the capital of France.\tFrance\n")
    (d / "qas.csv").write_text("what is the capital of france\t['Paris']\n")
    (d / "ckpt").mkdir()
    (d / "ckpt" / "config.json").write_text("{}\n")
    return d


def test_evaluate_out_equal_to_qas_is_refused(data, capsys):
    base = ["evaluate", "--passages", str(data / "psgs.tsv"), "--checkpoint", str(data / "ckpt")]
    for extra in ([], ["--overwrite"]):
        err = refused(capsys, data, *base, "--qas", str(data / "qas.csv"), "--out", str(data / "qas.csv"), *extra)
        assert f"--out {data / 'qas.csv'} is the input --qas" in err


def test_evaluate_predictions_file_is_a_declared_output(data, capsys):
    # --out FILE.json writes FILE.predictions.jsonl: that one may not be an input either
    qas = data / "run.predictions.jsonl"
    qas.write_text('{"question": "q", "answers": ["a"]}\n')
    err = refused(capsys, data, "evaluate", "--passages", str(data / "psgs.tsv"), "--qas", str(qas),
                  "--checkpoint", str(data / "ckpt"), "--out", str(data / "run.json"), "--overwrite")
    assert "(writes run.predictions.jsonl) is the input --qas" in err
    (data / "old.predictions.jsonl").write_text("earlier predictions\n")
    err = refused(capsys, data, "evaluate", "--passages", str(data / "psgs.tsv"), "--qas", str(data / "qas.csv"),
                  "--checkpoint", str(data / "ckpt"), "--out", str(data / "old.json"))
    assert "(writes old.predictions.jsonl) exists and is not empty" in err


def test_index_onto_an_existing_index_needs_overwrite(data, tmp_path, capsys):
    from megazoo.tasks.retrieval.index import build_index, load_index, save_index

    idx = tmp_path / "idx"
    save_index(idx, build_index(np.eye(4, dtype=np.float32), "flat"), np.arange(4), {"kind": "flat"})
    err = refused(capsys, tmp_path, "index", "--passages", str(data / "psgs.tsv"), "--checkpoint", str(data / "ckpt"),
                  "--out", str(idx))
    assert f"--out {idx} exists and is not empty" in err and "--overwrite" in err
    with pytest.raises(FileExistsError):  # the library call refuses too
        save_index(idx, build_index(np.eye(2, dtype=np.float32), "flat"), np.arange(2), {"kind": "flat"})
    assert load_index(idx)[1].tolist() == [0, 1, 2, 3]
    save_index(idx, build_index(np.eye(2, dtype=np.float32), "flat"), np.arange(2), {"kind": "flat"}, overwrite=True)
    assert load_index(idx)[1].tolist() == [0, 1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "idx"]


def test_an_index_of_another_passages_file_names_both(tmp_path):
    from megazoo.tasks.retrieval.index import IndexFolderError, build_index, load_index, save_index

    idx = tmp_path / "idx"
    save_index(idx, build_index(np.eye(4, dtype=np.float32), "flat"), np.arange(4), {"kind": "flat"})
    with pytest.raises(IndexFolderError, match=rf"{idx}: the index holds 4 passages, other.tsv has 3"):
        load_index(idx, expect_count=3, passages="other.tsv")
    (idx / "meta.json").write_bytes(b'{"kind": "\xff"}')
    with pytest.raises(IndexFolderError, match="meta.json: not the JSON an index folder holds"):
        load_index(idx)


# ---- readers and bounds --------------------------------------------------------------------------

def test_undecodable_passages_and_questions_name_file_and_line(data, tmp_path, capsys):
    bad = data / "bad.tsv"
    bad.write_bytes(b"id\ttext\ttitle\n1\tok\tt\n2\t\xff\xfe bad\tt\n")
    out = tmp_path / "e.json"
    code, err = run(capsys, "evaluate", "--passages", str(bad), "--qas", str(data / "qas.csv"), "--checkpoint",
                    str(data / "ckpt"), "--out", str(out))
    assert code == 2 and f"{bad}:3: not valid UTF-8" in err and len(err.splitlines()) == 1
    badq = data / "bad.csv"
    badq.write_bytes(b"q\t['a']\n\xc3\x28\t['b']\n")
    from megazoo.tasks.retrieval.data import RetrievalFormatError, read_qas

    with pytest.raises(RetrievalFormatError, match=rf"{badq}:2: not valid UTF-8"):
        read_qas(badq)
    assert not out.exists()


def test_more_local_ranks_than_the_machine_can_run_are_refused_before_any_starts(data, tmp_path, capsys):
    from megazoo.core.argtypes import local_rank_limit

    too_many = local_rank_limit() + 1
    code, err = run(capsys, "index", "--passages", str(data / "psgs.tsv"), "--checkpoint", str(data / "ckpt"),
                    "--out", str(tmp_path / "idx"), "--nproc", str(too_many))
    assert code == 2 and f"argument --nproc: {too_many} local ranks on this machine's" in err, err
    assert f"give at most {local_rank_limit()}" in err and not (tmp_path / "idx").exists()


def test_a_bad_checkpoint_fails_once_before_the_ranks_start(data, tmp_path, capsys, monkeypatch):
    import megazoo.core.parallel.launch as launch

    monkeypatch.setattr(launch, "spawn", lambda *a, **k: pytest.fail("ranks started for a bad setting"))
    code, err = run(capsys, "index", "--passages", str(data / "psgs.tsv"), "--checkpoint", str(data / "ckpt"),
                    "--out", str(tmp_path / "idx"), "--nproc", "2")
    assert code == 2 and "unsupported model_type" in err and "Traceback" not in err, err
    assert not (tmp_path / "idx").exists()


@pytest.mark.parametrize("stage, flag, value", [
    ("data", "--words", "5"), ("data", "--words", "1e9"), ("data", "--seed", "-1"),
    ("data", "--seed", str(2**40)), ("data", "--questions-per-passage", "0"),
    ("data", "--questions-per-passage", "1000000"),
    ("index", "--batch", "0"), ("index", "--batch", "1000000000"), ("index", "--nproc", "100000"),
    ("index", "--passage-length", "2"), ("index", "--passage-length", "nan"), ("index", "--nlist", "0"),
    ("index", "--nprobe", str(2**40)), ("index", "--hnsw-m", "100000"), ("index", "--ef-search", "0"),
    ("evaluate", "--question-length", "0"), ("evaluate", "--question-length", "1000000000"),
    ("evaluate", "--batch", "-3"), ("evaluate", "--top-k", "1,5,1000000000"), ("evaluate", "--top-k", "0"),
])
def test_numeric_flags_are_bounded(stage, flag, value, data, tmp_path, capsys):
    argv = {"data": ["data", str(tmp_path / "new")],
            "index": ["index", "--passages", str(data / "psgs.tsv"), "--checkpoint", str(data / "ckpt"),
                      "--out", str(tmp_path / "idx")],
            "evaluate": ["evaluate", "--passages", str(data / "psgs.tsv"), "--qas", str(data / "qas.csv"),
                         "--checkpoint", str(data / "ckpt"), "--out", str(tmp_path / "e.json")]}[stage]
    before = snapshot(tmp_path)
    try:
        code, err = run(capsys, *argv, f"{flag}={value}")
    except SystemExit as e:  # argparse: usage line and `error: argument --flag: ...`
        code, err = e.code, capsys.readouterr().err
    assert code == 2 and flag in err, err
    assert snapshot(tmp_path) == before


def test_leaderboard_batch_size_is_bounded(data):
    from megazoo.tasks.retrieval.leaderboard import EVALUATION

    for bad in (0, 10**9, True, 2.5):
        with pytest.raises(ValueError, match="suite option `batch_size: "):
            EVALUATION.run(str(data / "ckpt"), str(data), {"batch_size": bad})
