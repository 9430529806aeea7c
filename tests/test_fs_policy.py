"""core/fs: the output policy's rules and the atomic writers' scratch handling (issue #36)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from megazoo.core.fs import (SCRATCH_MARKER, Declared, OutputRefused, PathRole, atomic_folder, check_paths, enforce,
                             input_arg, output_arg, resumable_folder, sweep_stale, write_text_atomic)

IN = PathRole("input")
OUT_FILE = PathRole("output", "file")
OUT_DIR = PathRole("output", "folder")


def _check(inputs, outputs, overwrite=False):
    check_paths([Declared("--in", str(p), IN) for p in inputs],
                [Declared("--out", str(p), role) for p, role in outputs], overwrite)


def test_output_equal_inside_or_containing_an_input_is_refused(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_text("x")
    for out, words in ((data / "a.txt", "is the input"), (data / "sub", "lies inside the input folder"),
                       (tmp_path, "contains the input")):
        with pytest.raises(OutputRefused, match=words):
            _check([data / "a.txt" if words == "is the input" else data], [(out, OUT_DIR)], overwrite=True)


def test_an_input_folder_may_allow_outputs_inside_it(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    check_paths([Declared("--checkpoint", str(run), PathRole("input", inside_ok=True))],
                [Declared("--out", str(run / "eval.json"), OUT_FILE)])


def test_dotdot_and_links_are_resolved_before_the_check(tmp_path):
    box = tmp_path / "box"
    (box / "sub").mkdir(parents=True)
    (box / "mine.txt").write_text("x")
    with pytest.raises(OutputRefused, match="not empty"):
        _check([], [(f"{box}/sub/..", OUT_DIR)])
    link = tmp_path / "link"
    link.symlink_to(box / "mine.txt")
    with pytest.raises(OutputRefused, match="is the input"):
        _check([box / "mine.txt"], [(link, OUT_FILE)], overwrite=True)


def test_the_working_directory_and_home_are_never_outputs(tmp_path, monkeypatch):
    inner = tmp_path / "box" / "inner"
    inner.mkdir(parents=True)
    monkeypatch.chdir(inner)
    for out in ("..", ".", str(Path.home())):
        with pytest.raises(OutputRefused, match="is or contains"):
            _check([], [(out, OUT_DIR)], overwrite=True)


def test_existing_targets_need_overwrite_and_empty_ones_do_not(tmp_path):
    full = tmp_path / "full.json"
    full.write_text("{}")
    empty = tmp_path / "empty.json"
    empty.write_text("")
    with pytest.raises(OutputRefused, match="pass --overwrite"):
        _check([], [(full, OUT_FILE)])
    _check([], [(full, OUT_FILE)], overwrite=True)
    _check([], [(empty, OUT_FILE)])
    _check([], [(full, PathRole("output", "file", resumable=True))])


def test_derived_outputs_are_checked_too(tmp_path):
    pred = tmp_path / "a.predictions.json"
    pred.write_text("[]")
    role = PathRole("output", "file", also=lambda p: [p.with_name(p.stem + ".predictions.json")])
    with pytest.raises(OutputRefused, match=r"writes a.predictions.json\) is the input"):
        check_paths([Declared("PREDICTIONS", str(pred), IN)], [Declared("--out", str(tmp_path / "a.json"), role)],
                    overwrite=True)


def test_two_outputs_on_one_path_are_refused(tmp_path):
    with pytest.raises(OutputRefused, match="written twice"):
        _check([], [(tmp_path / "x", OUT_FILE), (tmp_path / "x", OUT_FILE)])


def test_enforce_reads_the_declarations_and_resolves_outputs(tmp_path, monkeypatch):
    parser = argparse.ArgumentParser()
    input_arg(parser, "--data")
    output_arg(parser, "--out")
    assert "--overwrite" in parser._option_string_actions
    src = tmp_path / "d.txt"
    src.write_text("x")
    with pytest.raises(OutputRefused):
        enforce(parser, parser.parse_args(["--data", str(src), "--out", str(src)]))
    monkeypatch.chdir(tmp_path)
    args = parser.parse_args(["--data", "d.txt", "--out", "sub/../o.json"])
    enforce(parser, args)
    assert args.out == str(tmp_path.resolve() / "o.json")


def test_atomic_folder_keeps_the_old_content_until_the_new_is_complete(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_folder(out, overwrite=True) as tmp:
            (tmp / "new.txt").write_text("half")
            raise RuntimeError("killed halfway")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"] and (out / "old.txt").read_text() == "old"
    with atomic_folder(out, overwrite=True) as tmp:
        (tmp / "new.txt").write_text("new")
    assert sorted(p.name for p in out.iterdir()) == ["new.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_killed_writers_scratch_is_swept_and_nothing_else(tmp_path):
    dead = _dead_pid()
    out = tmp_path / "out"
    ours = tmp_path / f".out.tmp-{dead}-abc"
    ours.mkdir()
    (ours / SCRATCH_MARKER).write_text(str(dead))
    unmarked = tmp_path / f".out.tmp-{dead}-xyz"  # no marker: not provably ours
    unmarked.mkdir()
    live = tmp_path / f".out.tmp-{os.getpid()}-abc"  # a running writer's
    live.mkdir()
    (live / SCRATCH_MARKER).write_text("")
    tmp_file = tmp_path / f"out.mz{dead}-0123abcd.tmp"
    tmp_file.write_text("half")
    users = tmp_path / "out.tmp"
    users.mkdir()
    sweep_stale(out)
    assert not ours.exists() and not tmp_file.exists()
    assert unmarked.exists() and live.exists() and users.exists()


def test_an_interrupted_overwrite_is_put_back_or_finished(tmp_path):
    dead = _dead_pid()
    out = tmp_path / "out"
    aside = tmp_path / f".out.old-{dead}-0123abcd"
    aside.mkdir()
    (aside / "old.txt").write_text("the user's")
    sweep_stale(out)  # killed between moving the old aside and moving the new in: the old comes back
    assert (out / "old.txt").read_text() == "the user's" and not aside.exists()
    aside.mkdir()
    (aside / "older.txt").write_text("replaced")
    sweep_stale(out)  # killed after the new one was in place: the old one goes
    assert not aside.exists() and (out / "old.txt").exists()


def test_atomic_file_sweeps_a_killed_writers_temporary_file(tmp_path):
    dead = _dead_pid()
    left = tmp_path / f"a.json.mz{dead}-0123abcd.tmp"
    left.write_text("half")
    write_text_atomic(tmp_path / "a.json", "{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]


def test_an_empty_output_path_is_refused(tmp_path):
    for bad in ("", "  ", "a\0b"):
        with pytest.raises(OutputRefused, match="is not a path"):
            _check([], [(bad, OUT_DIR)])


def test_a_resumable_folder_is_removed_on_an_error_and_kept_on_a_kill(tmp_path):
    new = tmp_path / "new"
    with pytest.raises(ValueError, match="bad shard"):
        with resumable_folder(new) as out:
            (out / "shard-0.jsonl").write_text("done")
            raise ValueError("bad shard")
    assert not new.exists()  # made by the run, so removed whole
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError):
        with resumable_folder(empty) as out:
            (out / "sub").mkdir()
            (out / "a").write_text("x")
            raise ValueError("bad")
    assert empty.is_dir() and list(empty.iterdir()) == []  # the user's empty folder stays
    with pytest.raises(KeyboardInterrupt):
        with resumable_folder(new) as out:
            (out / "shard-0.jsonl").write_text("done")
            raise KeyboardInterrupt
    assert (new / "shard-0.jsonl").read_text() == "done"  # a kill keeps the work for the rerun
    with pytest.raises(FileExistsError, match="not empty"):
        with resumable_folder(new):
            pass
    assert (new / "shard-0.jsonl").read_text() == "done"
