"""megazoo curate end to end: a recipe on a planted corpus, resume after a killed run, the same
survivors on a local Dask cluster of 2 workers as in one process, a scheduler that does not
answer, and the blend that `megazoo train` reads."""

import json
import time

import pytest

import megazoo.curate.filters as filters
from megazoo.cli import main as megazoo
from megazoo.core.data.blend import parse_data_path
from megazoo.curate.executor import LocalExecutor
from megazoo.curate.pipeline import run_stage
from megazoo.curate.planted import generate


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    out = tmp_path_factory.mktemp("planted")
    truth = generate(out, n_clean=40, n_shards=3, seed=2, n_reference=20, low_per_kind=2, n_contaminated=4)
    return out, truth


def survivors(folder):
    return sorted((p.relative_to(folder).as_posix(), p.read_text()) for p in folder.rglob("*.jsonl")
                  if not any(part.startswith("_") for part in p.relative_to(folder).parts))


def test_recipe_end_to_end_and_on_two_dask_workers(planted, tmp_path, capsys):
    out, truth = planted
    local = tmp_path / "local"
    assert megazoo(["curate", "curate", "--no-progress", "--set", f"input={out / 'raw'}", f"output={local}",
                    f"stages.quality.reference={out / 'reference'}", "stages.blend=false",
                    f"stages.decontaminate.tasks=[{out / 'eval' / 'lambada.jsonl'}, RACE={out / 'eval' / 'RACE'}]"]) == 0
    report = json.loads((local / "report.json").read_text())
    names = [s["stage"] for s in report["stages"]]
    assert names == ["filter", "quality", "exact-dedup", "fuzzy-dedup", "decontaminate"]
    gone = {json.loads(x)["id"]: json.loads(x) for x in (local / "removed.jsonl").read_text().splitlines()}
    assert {g["stage"] for g in gone.values()} == set(names)
    assert all(set(g) == {"id", "stage", "reason"} for g in gone.values())
    assert {c for c, _ in truth["contaminated"]} <= set(gone)
    assert "symbols" in " ".join(i for i in gone if gone[i]["stage"] == "filter")
    assert (local / "report.md").read_text().count("|") > 20 and (local / "report.png").stat().st_size > 1000
    # the same recipe on a local Dask cluster of two worker processes: the same surviving documents
    dask_dir = tmp_path / "dask"
    assert megazoo(["curate", "curate", "--no-progress", "--dask-workers", "2", "--set", f"input={out / 'raw'}",
                    f"output={dask_dir}", f"stages.quality.reference={out / 'reference'}", "stages.blend=false",
                    f"stages.decontaminate.tasks=[{out / 'eval' / 'lambada.jsonl'}, RACE={out / 'eval' / 'RACE'}]"]) == 0
    dask_report = json.loads((dask_dir / "report.json").read_text())
    assert (dask_report["executor"], dask_report["workers"]) == ("dask", 2)
    assert survivors(local / "05-decontaminate") == survivors(dask_dir / "05-decontaminate")
    assert (local / "removed.jsonl").read_text() == (dask_dir / "removed.jsonl").read_text()


def test_a_killed_run_continues_from_finished_shards(planted, tmp_path, monkeypatch):
    out, _ = planted
    whole = tmp_path / "whole"
    run_stage("filter", {}, out / "raw", whole, "text", LocalExecutor(False))
    calls = []
    real = filters.filter_shard

    def dies_on_second_shard(docs, params):
        calls.append(docs[0]["id"])
        if len(calls) == 2:
            raise KeyboardInterrupt  # the run is killed while the second shard is in progress
        return real(docs, params)

    monkeypatch.setattr(filters, "filter_shard", dies_on_second_shard)
    part = tmp_path / "part"
    with pytest.raises(KeyboardInterrupt):
        run_stage("filter", {}, out / "raw", part, "text", LocalExecutor(False))
    first = sorted((part / "_done").rglob("*.done"))
    assert len(first) == 1
    stamp = first[0].stat().st_mtime_ns
    calls.clear()
    monkeypatch.setattr(filters, "filter_shard", real)
    stats = run_stage("filter", {}, out / "raw", part, "text", LocalExecutor(False))
    assert stats["resumed_shards"] == 1 and first[0].stat().st_mtime_ns == stamp
    assert survivors(part) == survivors(whole)


def test_a_scheduler_that_does_not_answer_is_one_clear_error(planted, tmp_path, capsys):
    out, _ = planted
    start = time.monotonic()
    code = megazoo(["curate", "filter", "--input", str(out / "raw"), "--output", str(tmp_path / "o"),
                    "--scheduler", "tcp://127.0.0.1:9", "--timeout", "2"])
    err = capsys.readouterr().err
    assert code == 2 and time.monotonic() - start < 30
    assert len(err.strip().splitlines()) == 1
    assert "--scheduler tcp://127.0.0.1:9: no Dask scheduler answered within 2 s" in err


def test_blend_writes_the_data_path_the_trainer_reads(planted, tmp_path, capsys):
    out, _ = planted
    code = megazoo(["curate", "blend", "--input", str(out / "raw"), "--output", str(tmp_path / "b"),
                    "--epochs", "web=1", "books=3", "--no-progress"])
    assert code == 0
    blend = json.loads((tmp_path / "b" / "blend.json").read_text())
    prefixes, weights = parse_data_path(blend["data_path"])
    assert [p.rsplit("/", 1)[-1] for p in prefixes] == ["books", "web"]
    tokens = blend["sources"]
    expected = 3 * tokens["books"]["tokens"] / (3 * tokens["books"]["tokens"] + tokens["web"]["tokens"])
    assert weights[0] == pytest.approx(expected, rel=1e-4)
    assert all((tmp_path / "b" / f"{name}.bin").stat().st_size > 0 for name in ("web", "books"))
    stamp = (tmp_path / "b" / "web.bin").stat().st_mtime_ns
    # a rerun with new weights is refused, naming the setting; with --overwrite it keeps the .bin/.idx
    assert megazoo(["curate", "blend", "--input", str(out / "raw"), "--output", str(tmp_path / "b"),
                    "--weight", "web=0.25", "books=0.75", "--no-progress"]) == 2
    assert "blend.sources is " in capsys.readouterr().err
    assert megazoo(["curate", "blend", "--input", str(out / "raw"), "--output", str(tmp_path / "b"),
                    "--weight", "web=0.25", "books=0.75", "--no-progress", "--overwrite"]) == 0
    assert (tmp_path / "b" / "web.bin").stat().st_mtime_ns == stamp
    assert parse_data_path((tmp_path / "b" / "data_path.txt").read_text().strip())[1] == [0.75, 0.25]
    assert megazoo(["curate", "blend", "--input", str(out / "raw"), "--output", str(tmp_path / "c"),
                    "--weight", "news=1"]) == 2
    assert "blend.sources.news: no such source" in capsys.readouterr().err
