"""megazoo curate under the output policy (issue #36, point 4 and its cases), each through the CLI:
shards that would share an output name, deduplication keyed by content and place (not by a user's
id), a recipe whose output is, contains or lies inside an input, reruns with changed settings,
report counts against the files, atomic output folders, bounded numbers and named keys, and
undecodable UTF-8 named by file and line. Inputs and bystander files are byte-identical afterwards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from megazoo.cli import main as megazoo
from megazoo.curate.cli import recipe_parser, stage_parsers
from tests.cli_contract import Command, outputs_of, role, run_case, scenarios, snapshot

SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]


def text(i: int, n: int = 30) -> str:
    """A document of n pseudo-words drawn for i: documents of different i share no 5-word shingle."""
    import random

    rng = random.Random(i)
    words = ["".join(rng.choice(SYLLABLES) for _ in range(3)) for _ in range(n)]
    return "the " + " ".join(words) + " and so on"


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def run(argv: list[str], capsys) -> tuple[int, str]:
    code = megazoo(argv)
    return code, capsys.readouterr().err


def lines(path: Path) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def shard_lines(folder: Path) -> int:
    """Documents in a stage folder's shards, counted from the files (not from any report)."""
    return sum(lines(p) for p in folder.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".txt")
               and not any(part.startswith("_") for part in p.relative_to(folder).parts))


@pytest.fixture
def raw(tmp_path):
    folder = tmp_path / "raw"
    jsonl(folder / "s1.jsonl", [{"text": text(i)} for i in range(4)])
    jsonl(folder / "s2.jsonl", [{"text": text(i)} for i in range(4, 8)])
    return folder


def no_change(tmp_path, before, *, except_under: Path | None = None):
    after = snapshot(tmp_path)
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    if except_under is not None:
        prefix = str(except_under.relative_to(tmp_path))
        changed = {k for k in changed if not (k == prefix or k.startswith(prefix + "/"))}
    assert not changed, sorted(changed)


# ---- the stage parsers declare their paths; the contract's cases hold --------------------------------

def test_every_stage_declares_its_paths():
    parsers = stage_parsers()
    assert set(parsers) == {"filter", "quality", "exact-dedup", "fuzzy-dedup", "decontaminate", "blend", "generate"}
    for word, parser in parsers.items():
        cmd = Command(("curate", word), parser)
        outs = outputs_of(cmd)
        assert len(outs) == 1 and role(outs[0]).kind == "folder", word
        declared = {a.dest for a in parser._actions if role(a) is not None}
        wanted = {"generate": {"out"}, "quality": {"input", "output", "reference"},
                  "decontaminate": {"input", "output", "tasks"}, "blend": {"input", "output", "tokenizer"}}
        assert declared == wanted.get(word, {"input", "output"}), word
    assert "--overwrite" in recipe_parser()._option_string_actions


@pytest.mark.parametrize("word", ["exact-dedup", "decontaminate"])
def test_contract_cases_for_curate_stages(word, tmp_path):
    cmd = Command(("curate", word), stage_parsers()[word])
    failures = []
    for case in scenarios(cmd, tmp_path):
        problems = run_case(case, tmp_path)
        if problems:
            failures.append(f"{case.title}: {problems[:3]}")
    assert not failures, failures


# ---- a.jsonl and a.txt: one output name ------------------------------------------------------------

def test_shards_that_would_share_an_output_name_are_refused(tmp_path, capsys):
    raw = tmp_path / "raw"
    jsonl(raw / "a.jsonl", [{"text": text(i)} for i in range(12)])
    (raw / "a.txt").write_text("".join(text(i) + "\n" for i in range(20, 26)))
    before = snapshot(tmp_path)
    code, err = run(["curate", "filter", "--input", str(raw), "--output", str(tmp_path / "out"), "--no-progress"],
                    capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"{raw / 'a.jsonl'} and {raw / 'a.txt'} would both be written as a.jsonl" in err
    no_change(tmp_path, before)  # no output folder, inputs intact


def test_same_stem_in_other_folders_is_fine(tmp_path, capsys):
    raw = tmp_path / "raw"
    jsonl(raw / "web" / "a.jsonl", [{"text": text(i)} for i in range(3)])
    (raw / "books").mkdir()
    (raw / "books" / "a.txt").write_text("".join(text(i) + "\n" for i in range(10, 13)))
    code, err = run(["curate", "exact-dedup", "--input", str(raw), "--output", str(tmp_path / "out"),
                     "--no-progress"], capsys)
    assert code == 0, err
    assert shard_lines(tmp_path / "out") == 6


# ---- dedup keyed by content and place, not by id ------------------------------------------------------

@pytest.mark.parametrize("stage", ["exact-dedup", "fuzzy-dedup"])
def test_a_unique_document_sharing_an_id_with_a_copy_is_kept(stage, tmp_path, capsys):
    raw = tmp_path / "raw"
    jsonl(raw / "s1.jsonl", [{"id": "x", "text": text(1)}, {"id": "y", "text": text(2)}])
    # "d" is a copy of x; the other "d" is unique and must stay
    jsonl(raw / "s2.jsonl", [{"id": "d", "text": text(1)}, {"id": "d", "text": text(9)}])
    before = snapshot(raw)
    code, err = run(["curate", stage, "--input", str(raw), "--output", str(tmp_path / "out"), "--no-progress"],
                    capsys)
    assert code == 0, err
    kept = [json.loads(x) for x in (tmp_path / "out" / "s2.jsonl").read_text().splitlines()]
    assert [d["text"] for d in kept] == [text(9)]
    removed = [json.loads(x) for x in (tmp_path / "out" / "_report" / "removed.jsonl").read_text().splitlines()]
    assert len(removed) == 1 and removed[0]["id"] == "d" and "of x" in removed[0]["reason"]
    stats = json.loads((tmp_path / "out" / "_stage.json").read_text())
    assert (stats["docs_in"], stats["docs_out"], stats["removed"]) == (4, 3, 1)
    assert snapshot(raw) == before


# ---- a recipe's output against its inputs ------------------------------------------------------------

def recipe(path: Path, inp, out, stages: str = "  exact-dedup: {}\n") -> Path:
    path.write_text(f"input: {inp}\noutput: {out}\nstages:\n{stages}")
    return path


@pytest.mark.parametrize("where, relation", [
    ("same", "is the input"), ("inside", "lies inside the input folder"), ("contains", "contains the input")])
def test_a_recipe_whose_output_meets_its_input_is_refused_before_any_stage(where, relation, tmp_path, capsys):
    raw = tmp_path / "box" / "raw"
    jsonl(raw / "s1.jsonl", [{"text": text(i)} for i in range(3)])
    out = {"same": raw, "inside": raw / "curated", "contains": tmp_path / "box"}[where]
    path = recipe(tmp_path / "r.yaml", raw, out)
    before = snapshot(tmp_path)
    for extra in ([], ["--overwrite"]):
        code, err = run(["curate", str(path), "--no-progress", *extra], capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert f"r.yaml: output {out} {relation} input {raw}" in err
        no_change(tmp_path, before)


def test_a_recipe_output_holding_the_recipe_or_the_reference_is_refused(tmp_path, capsys):
    raw = tmp_path / "raw"
    jsonl(raw / "s1.jsonl", [{"text": text(i)} for i in range(3)])
    out = tmp_path / "out"
    jsonl(out / "ref.jsonl", [{"text": text(7)}])
    path = recipe(out / "r.yaml", raw, tmp_path / "elsewhere", f"  quality: {{reference: {out / 'ref.jsonl'}}}\n")
    before = snapshot(tmp_path)
    code, err = run(["curate", str(path), "--set", f"output={out}", "--overwrite", "--no-progress"], capsys)
    assert code == 2 and "contains the input" in err
    no_change(tmp_path, before)


# ---- reruns with changed settings ------------------------------------------------------------------

def test_a_stage_rerun_with_other_settings_is_refused_naming_it(raw, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["curate", "fuzzy-dedup", "--input", str(raw), "--output", str(out), "--no-progress"]
    assert run(argv + ["--threshold", "0.8"], capsys)[0] == 0
    code, err = run(argv + ["--threshold", "0.8"], capsys)  # the same settings: resumes, all shards done
    assert code == 0
    before = snapshot(tmp_path)
    code, err = run(argv + ["--threshold", "0.9"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "fuzzy-dedup.threshold is 0.9 now and was 0.8" in err and "--overwrite" in err
    no_change(tmp_path, before)
    code, err = run(argv + ["--threshold", "0.9", "--overwrite"], capsys)
    assert code == 0, err
    assert json.loads((out / "_settings.json").read_text())["settings"]["threshold"] == 0.9
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]  # no scratch or old folder left


def test_a_stage_rerun_over_changed_input_is_refused(raw, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["curate", "exact-dedup", "--input", str(raw), "--output", str(out), "--no-progress"]
    assert run(argv, capsys)[0] == 0
    jsonl(raw / "s2.jsonl", [{"text": text(i)} for i in range(4, 9)])
    code, err = run(argv, capsys)
    assert code == 2 and "the input shard s2.jsonl changed after" in err


def test_a_recipe_rerun_with_other_settings_is_refused_naming_the_key(raw, tmp_path, capsys):
    path = recipe(tmp_path / "r.yaml", raw, tmp_path / "out", "  filter: {min_words: 5, languages: null}\n"
                                                               "  exact-dedup: {}\n")
    assert run(["curate", str(path), "--no-progress"], capsys)[0] == 0
    before = snapshot(tmp_path)
    code, err = run(["curate", str(path), "--no-progress", "--set", "stages.filter.min_words=40"], capsys)
    assert code == 2 and "r.yaml: stages.filter.min_words is 40 now and was 5" in err
    no_change(tmp_path, before)
    code, err = run(["curate", str(path), "--no-progress", "--set", "stages.filter.min_words=40", "--overwrite"],
                    capsys)
    assert code == 0, err
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["stages"][0]["docs_out"] == 0 and report["final"] == str(tmp_path / "out" / "02-exact-dedup")


def test_a_recipe_into_a_folder_of_other_files_is_refused(raw, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("the user's\n")
    path = recipe(tmp_path / "r.yaml", raw, out)
    before = snapshot(tmp_path)
    code, err = run(["curate", str(path), "--no-progress"], capsys)
    assert code == 2 and "is not a curation recipe's output" in err
    no_change(tmp_path, before)


# ---- counts against the files ----------------------------------------------------------------------

def test_report_counts_equal_the_files(tmp_path, capsys):
    raw = tmp_path / "raw"
    jsonl(raw / "web" / "s1.jsonl", [{"text": text(i)} for i in range(5)] + [{"text": "too short"}])
    jsonl(raw / "web" / "s2.jsonl", [{"text": text(i)} for i in range(3, 8)])
    (raw / "books").mkdir()
    (raw / "books" / "b.txt").write_text("".join(text(i) + "\n" for i in range(20, 24)) + "\n" + text(1) + "\n")
    path = recipe(tmp_path / "r.yaml", raw, tmp_path / "out",
                  "  filter: {min_words: 5, languages: null}\n  exact-dedup: {}\n  fuzzy-dedup: {}\n")
    assert run(["curate", str(path), "--no-progress"], capsys)[0] == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    source = raw
    for stats in report["stages"]:
        folder = Path(stats["folder"])
        assert stats["docs_in"] == shard_lines(source), stats["stage"]
        assert stats["docs_out"] == shard_lines(folder), stats["stage"]
        assert stats["removed"] == sum(lines(p) for p in (folder / "_removed").rglob("*.jsonl"))
        source = folder
    assert [s["docs_out"] for s in report["stages"]] == [15, 12, 12]
    assert report["removed"] == lines(tmp_path / "out" / "removed.jsonl") == 16 - 12


def test_a_count_that_the_files_do_not_hold_is_refused(raw, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["curate", "exact-dedup", "--input", str(raw), "--output", str(out), "--no-progress"]
    assert run(argv, capsys)[0] == 0
    shard = out / "s1.jsonl"
    shard.write_text("".join(shard.read_text().splitlines(keepends=True)[1:]))  # a document lost afterwards
    code, err = run(argv, capsys)
    assert code == 2 and f"{shard}: holds 3 documents, but the stage counted 4 (docs_out)" in err


# ---- atomic output folders ------------------------------------------------------------------------

def test_a_failed_overwrite_leaves_the_old_folder_and_a_failed_new_run_leaves_nothing(tmp_path, capsys):
    raw = tmp_path / "raw"
    jsonl(raw / "s1.jsonl", [{"text": text(1)}])
    (raw / "s2.jsonl").write_text('{"text": "fine"}\nnot json\n')
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("the user's own file\n")
    for name in ("out.tmp", ".out.tmp-1-abc"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "keep.txt").write_text("a bystander named like scratch\n")
    before = snapshot(tmp_path)
    code, err = run(["curate", "filter", "--input", str(raw), "--output", str(out), "--overwrite", "--no-progress"],
                    capsys)
    assert code == 2 and "s2.jsonl:2: not a JSON object" in err
    no_change(tmp_path, before)
    code, err = run(["curate", "filter", "--input", str(raw), "--output", str(tmp_path / "new"), "--no-progress"],
                    capsys)
    assert code == 2
    no_change(tmp_path, before)  # the folder it made is gone again; nothing else touched


def test_overwrite_replaces_only_once_complete_and_touches_no_sibling(raw, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("the user's own file\n")
    (tmp_path / "out.tmp").write_text("a bystander\n")
    code, err = run(["curate", "filter", "--input", str(raw), "--output", str(out), "--no-progress"], capsys)
    assert code == 2 and "exists and is not empty" in err and (out / "mine.txt").is_file()
    code, err = run(["curate", "filter", "--input", str(raw), "--output", str(out), "--overwrite", "--no-progress",
                     "--set", "languages=null", "min_words=5"], capsys)
    assert code == 0, err
    assert not (out / "mine.txt").exists() and shard_lines(out) == 8
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "out.tmp", "raw"]


def test_generate_refuses_a_full_folder_and_replaces_it_atomically(tmp_path, capsys):
    out = tmp_path / "planted"
    out.mkdir()
    (out / "mine.txt").write_text("mine\n")
    code, err = run(["curate", "generate", str(out)], capsys)
    assert code == 2 and "exists and is not empty" in err and (out / "mine.txt").is_file()
    code, err = run(["curate", "generate", str(out / "..")], capsys)
    assert code == 2 and (out / "mine.txt").is_file()
    (tmp_path / "planted.tmp").mkdir()  # a bystander named like a scratch folder
    code, err = run(["curate", "generate", str(out), "--clean", "40", "--shards", "1", "--overwrite"], capsys)
    assert code == 0, err
    assert not (out / "mine.txt").exists() and (out / "truth.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["planted", "planted.tmp"]


# ---- numbers and keys ------------------------------------------------------------------------------

@pytest.mark.parametrize("stage, flags, message", [
    ("fuzzy-dedup", ["--permutations", "1e9"], "argument --permutations: expected an integer, got '1e9'"),
    ("fuzzy-dedup", ["--permutations", "1000000000"], "argument --permutations: must be between 1 and 8192"),
    ("fuzzy-dedup", ["--threshold", "nan"], "argument --threshold: expected a finite number"),
    ("fuzzy-dedup", ["--threshold", "inf"], "argument --threshold: expected a finite number"),
    ("fuzzy-dedup", ["--bands", "0"], "argument --bands: must be between 1 and 8192"),
    ("fuzzy-dedup", ["--shingle-size", "-3"], "argument --shingle-size: must be between 1 and 1000"),
    ("fuzzy-dedup", ["--timeout", "0"], "argument --timeout: must be between"),
    ("filter", ["--dask-workers", "100000"], "argument --dask-workers: must be between 1 and 1024"),
    ("filter", ["--dask-workers", "1024"], "--dask-workers 1024: a local cluster of more than"),
    ("quality", ["--reference", "ref", "--threshold", "2"], "argument --threshold: must be between 0 and 1"),
    ("blend", ["--weight", "web=nan"], "--weight web=nan: needs a number in [0, 1e6]"),
    ("blend", ["--epochs", "web=1e9"], "--epochs web=1e9: needs a number in [0, 1e6]"),
    ("fuzzy-dedup", ["--set", "seed=-1"], "fuzzy-dedup.seed: -1; needs a whole number in [0, 4294967295]"),
    ("fuzzy-dedup", ["--set", "all_pairs_below=2000"], "fuzzy-dedup.all_pairs_below: 2000; needs a whole number "
                                                       "in [2, 1024]"),
    ("filter", ["--set", "min_words=.inf"], "filter.min_words: expected a number or null, got inf"),
    ("filter", ["--set", "min_words=-1"], "filter.min_words: -1; needs a whole number in [0, 1000000000]"),
    ("filter", ["--set", "max_bullet_lines=.nan"], "filter.max_bullet_lines: expected a number or null"),
    ("filter", ["--set", "min_word=3"], "filter.min_word: unknown filter setting; did you mean `min_words`?"),
    ("decontaminate", ["--tasks", "generated", "--set", "ngram=100000"], "decontaminate.ngram: 100000; needs"),
    ("fuzzy-dedup", ["--set", "permutation=64"], "fuzzy-dedup.permutation: unknown setting; did you mean "
                                                 "`permutations`?"),
])
def test_numbers_out_of_bounds_and_unknown_keys_are_refused(stage, flags, message, raw, tmp_path, capsys):
    before = snapshot(tmp_path)
    code, err = run(["curate", stage, "--input", str(raw), "--output", str(tmp_path / "out"), "--no-progress",
                     *flags], capsys)
    assert code == 2 and message in err, err
    assert "Traceback" not in err
    no_change(tmp_path, before)


@pytest.mark.parametrize("setting, message", [
    ("stages.fuzzy-dedup.permutations=1000000000", "r.yaml: stages.fuzzy-dedup.permutations: 1000000000; needs a "
                                                   "whole number in [1, 8192]"),
    ("stages.fuzzy-dedup.threshold=.nan", "r.yaml: stages.fuzzy-dedup.threshold: nan; needs a Jaccard similarity"),
    ("stages.quality.threshold=.inf", "stages.quality.threshold: inf; needs a number in [0, 1]"),
    ("outptu=x", "r.yaml: outptu: unknown key; did you mean `output`?"),
    ("dask.worker=2", "r.yaml: dask.worker: unknown setting; did you mean `workers`?"),
    ("dask.timeout=.nan", "r.yaml: dask.timeout: nan; needs a number in (0, 86400]"),
    ("dask.workers=1024", "dask.workers 1024: a local cluster of more than"),
    ("stages.blend.sources.web.epochs=1.0e+300", "stages.blend.sources.web.epochs: 1e+300; needs a number in "
                                                 "[0, 1000000]"),
])
def test_recipe_keys_are_bounded_and_named(setting, message, raw, tmp_path, capsys):
    path = recipe(tmp_path / "r.yaml", raw, tmp_path / "out",
                  "  quality: {reference: ref}\n  exact-dedup: {}\n  fuzzy-dedup: {}\n"
                  "  blend: {sources: {web: {epochs: 1}}}\n")
    before = snapshot(tmp_path)
    code, err = run(["curate", str(path), "--no-progress", "--set", setting], capsys)
    assert code == 2 and message in err, err
    no_change(tmp_path, before)


def test_a_file_as_input_is_refused_before_any_dask_worker_starts(raw, tmp_path, capsys, monkeypatch):
    import megazoo.curate.executor as executor

    def no_cluster(*a, **k):
        raise AssertionError("a Dask cluster was started for an input that is not a folder")

    monkeypatch.setattr(executor, "DaskExecutor", no_cluster)
    shard = next(p for p in raw.rglob("*") if p.is_file())
    code, err = run(["curate", "exact-dedup", "--input", str(shard), "--output", str(tmp_path / "out"),
                     "--no-progress", "--dask-workers", "2"], capsys)
    assert code == 2 and f"{shard}: no such input folder" in err, err
    assert not (tmp_path / "out").exists()


def test_the_signature_matrix_is_checked_against_memory(raw, tmp_path, capsys, monkeypatch):
    import megazoo.core.argtypes as argtypes

    monkeypatch.setattr(argtypes, "available_memory", lambda: 1000)
    code, err = run(["curate", "fuzzy-dedup", "--input", str(raw), "--output", str(tmp_path / "out"),
                     "--no-progress"], capsys)
    assert code == 2 and "fuzzy-dedup's signature matrix (8 documents x 20 bands) needs" in err
    assert "GiB of memory" in err and not (tmp_path / "out").exists()


# ---- undecodable UTF-8 ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["a.jsonl", "a.txt"])
def test_undecodable_utf8_names_the_file_and_line(name, tmp_path, capsys):
    raw = tmp_path / "raw"
    raw.mkdir()
    row = b'{"text": "ok"}\n' if name.endswith(".jsonl") else b"ok\n"
    (raw / name).write_bytes(row + row + b'{"text": "caf\xe9"}\n')
    before = snapshot(tmp_path)
    code, err = run(["curate", "filter", "--input", str(raw), "--output", str(tmp_path / "out"), "--no-progress"],
                    capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"{raw / name}:3: not valid UTF-8" in err
    no_change(tmp_path, before)


def test_undecodable_recipe_and_evaluation_files_name_the_line(raw, tmp_path, capsys):
    path = tmp_path / "r.yaml"
    path.write_bytes(b"input: raw\noutput: \xff\xfe\n")
    code, err = run(["curate", str(path)], capsys)
    assert code == 2 and f"{path}:2: not valid UTF-8" in err
    bad = tmp_path / "eval.jsonl"
    bad.write_bytes(b'{"text": "a"}\n\x80\n')
    code, err = run(["curate", "decontaminate", "--input", str(raw), "--output", str(tmp_path / "out"),
                     "--tasks", str(bad), "--no-progress"], capsys)
    assert code == 2 and f"{bad}:2: not valid UTF-8" in err and not (tmp_path / "out").exists()


def test_a_named_evaluation_folder_is_an_input_too(raw, tmp_path, capsys):
    race = tmp_path / "RACE"
    jsonl(race / "test" / "1.jsonl", [{"article": text(3)}])
    before = snapshot(tmp_path)
    code, err = run(["curate", "decontaminate", "--input", str(raw), "--output", str(race / "out"),
                     "--tasks", f"RACE={race}", "--no-progress"], capsys)
    assert code == 2 and f"--output {race / 'out'} lies inside the input folder --tasks {race}" in err
    no_change(tmp_path, before)
