"""megazoo curate: the heuristic filter rules, language identification, the shard readers and their
one-line errors."""

import json

import pytest

from megazoo.cli import main as megazoo
from megazoo.curate.errors import CurateError
from megazoo.curate.filters import FilterConfig, filter_reason
from megazoo.curate.shards import read_shard

GOOD = ("The library reference describes the standard modules that are distributed with the language. "
        "It also describes some of the optional components that are commonly included in distributions. "
        "The standard library is very extensive and offers a wide range of facilities, as indicated by the "
        "long table of contents listed below. The library contains built-in modules that provide access to "
        "system functionality such as file input and output that would otherwise be inaccessible to programmers.")
GERMAN = ("Die Bibliothek beschreibt die Standardmodule, die mit der Sprache verteilt werden. Sie beschreibt "
          "auch einige der optionalen Komponenten, die gewöhnlich in Distributionen enthalten sind. Die "
          "Standardbibliothek ist sehr umfangreich und bietet eine breite Palette von Einrichtungen, wie das "
          "lange Inhaltsverzeichnis zeigt. Die Bibliothek enthält eingebaute Module, die Zugriff auf "
          "Systemfunktionen wie Dateiein- und -ausgabe bieten, die Programmierern sonst nicht zugänglich wären.")


def rule(text, **settings):
    reason = filter_reason(text, FilterConfig.from_dict(settings))
    return reason and reason.split(":")[0]


def test_clean_text_passes_and_each_rule_fires():
    assert rule(GOOD) is None
    assert rule("too short to keep") == "min_words"
    assert rule(" ".join(["a"] * 60)) == "min_mean_word_length"
    assert rule(GOOD + " #tag" * 20) == "max_symbol_ratio"
    assert rule("\n".join(f"* item {i} of the list with words" for i in range(12))) == "max_bullet_lines"
    assert rule("\n".join(f"line {i} trails off and goes to the ..." for i in range(12)),
                max_symbol_ratio=None) == "max_ellipsis_lines"
    assert rule(GOOD + " 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23") == "min_alpha_words"
    assert rule(" ".join(f"word{i} alpha" for i in range(40))) == "min_stop_words"
    boiler = "\n".join(["Subscribe to the newsletter and share it with the world today"] * 10)
    assert rule(boiler) == "max_duplicate_lines"
    assert rule(" ".join(["the cat sat with the dog"] * 12)) == "max_top_ngram"
    assert rule(GOOD + " lorem ipsum dolor sit amet") == "bad_phrases"
    assert rule(GERMAN, min_stop_words=None) == "languages"
    assert rule(GERMAN, languages=["de"], min_stop_words=None) is None


def test_rules_switch_off_and_unknown_settings_are_refused():
    assert rule("too short to keep", min_words=None, min_stop_words=None, languages=None) is None
    with pytest.raises(CurateError, match="filter.min_word: unknown filter setting"):
        FilterConfig.from_dict({"min_word": 3})


def test_readers_add_ids_and_read_text_and_parquet(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"text": "one"}\n\n{"id": 7, "text": "two", "url": "u"}\n')
    (tmp_path / "b.txt").write_text("first line\nsecond line\n")
    assert read_shard(tmp_path, "a.jsonl") == [{"text": "one", "id": "a:1"}, {"id": "7", "text": "two", "url": "u"}]
    assert [d["id"] for d in read_shard(tmp_path, "b.txt")] == ["b:1", "b:2"]
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"content": ["x y", "z"]}), tmp_path / "c.parquet")
    assert [d["id"] for d in read_shard(tmp_path, "c.parquet", "content")] == ["c:1", "c:2"]


@pytest.mark.parametrize("content, message", [
    ("this is plain text, not JSON\n", "shard.jsonl:1: not a JSON object"),
    ('{"text": "ok"}\n{"body": "no text key"}\n', "shard.jsonl:2: no string `text` key (keys: body)"),
])
def test_bad_shards_are_one_line_errors(tmp_path, capsys, content, message):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "shard.jsonl").write_text(content)
    code = megazoo(["curate", "filter", "--input", str(raw), "--output", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert err.startswith("megazoo curate: error:") and "Traceback" not in err


def test_recipe_errors(tmp_path, capsys):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("input: raw\noutput: out\nstages:\n  fuzzy-dedupe: {}\n")
    assert megazoo(["curate", str(recipe)]) == 2
    assert "stages.fuzzy-dedupe: unknown stage; did you mean `fuzzy-dedup`?" in capsys.readouterr().err
    assert megazoo(["curate", str(tmp_path / "missing.yaml")]) == 2
    assert "no such recipe file" in capsys.readouterr().err
    assert megazoo(["curate"]) == 2
    assert megazoo(["curate", "generate", str(tmp_path)]) == 2  # never overwrites a folder
    assert "exists and is not empty" in capsys.readouterr().err


def test_report_json_is_written_for_a_stage(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "s.jsonl").write_text(json.dumps({"text": GOOD}) + "\n" + json.dumps({"text": "short"}) + "\n")
    assert megazoo(["curate", "filter", "--input", str(raw), "--output", str(tmp_path / "o"), "--no-progress"]) == 0
    removed = [json.loads(x) for x in (tmp_path / "o" / "_report" / "removed.jsonl").read_text().splitlines()]
    assert removed == [{"id": "s:2", "stage": "filter", "reason": "min_words: 1 words < 50"}]
    assert [d["id"] for d in read_shard(tmp_path / "o", "s.jsonl")] == ["s:1"]
    assert (tmp_path / "o" / "_report" / "report.png").stat().st_size > 0
