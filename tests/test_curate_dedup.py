"""megazoo curate: exact and fuzzy deduplication on a planted corpus (edited copies at measured
Jaccard similarities, in other shards than their originals), the LSH settings check, and
decontamination's cutting rule and its removal of every planted overlap."""

import json

import pytest

from megazoo.cli import main as megazoo
from megazoo.curate.decontaminate import PRESETS, build_index, decontaminate_shard, split
from megazoo.curate.eval_sets import benchmark_texts, ngram_index, tokens
from megazoo.curate.executor import LocalExecutor
from megazoo.curate.fuzzy_dedup import candidate_probability, check_config
from megazoo.curate.pipeline import run_stage
from megazoo.curate.planted import generate, precision_recall
from megazoo.curate.shards import iter_output


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    out = tmp_path_factory.mktemp("planted")
    truth = generate(out, n_clean=80, n_shards=3, seed=1, n_reference=10, low_per_kind=2, n_contaminated=8)
    return out, truth


def removed(folder):
    return [json.loads(line) for path in sorted((folder / "_removed").rglob("*.jsonl"))
            for line in path.read_text().splitlines()]


def test_exact_then_fuzzy_find_the_planted_pairs(planted, tmp_path):
    out, truth = planted
    ex = LocalExecutor(progress=False)
    exact = run_stage("exact-dedup", {}, out / "raw", tmp_path / "exact", "text", ex)
    copies = {r["id"]: r["reason"] for r in removed(tmp_path / "exact")}
    for original, copy in truth["exact_pairs"]:  # the later of each pair in shard order goes
        assert copies.get(copy, copies.get(original, "")).startswith("exact-dedup: copy of ")
    assert exact["extra"]["cluster_sizes"][:1] and min(exact["extra"]["cluster_sizes"]) >= 2
    again = run_stage("exact-dedup", {}, out / "raw", tmp_path / "exact", "text", ex)  # rerun: all 3 web + 1 books shards done
    assert again["resumed_shards"] == 4 and again["docs_out"] == exact["docs_out"]
    fuzzy = run_stage("fuzzy-dedup", {"threshold": 0.8}, tmp_path / "exact", tmp_path / "fuzzy", "text", ex)
    pr = precision_recall({**truth, "exact_pairs": []}, [r for r in removed(tmp_path / "fuzzy")
                                                        if not r["id"].startswith("low-")], 0.8)
    assert pr["planted_above"] >= 8
    assert pr["recall"] >= 0.95 and pr["precision"] >= 0.95, pr
    below = {p[1] for p in truth["near_pairs"] if p[2] < 0.8} | {p[0] for p in truth["near_pairs"] if p[2] < 0.8}
    assert not below & {r["id"] for r in removed(tmp_path / "fuzzy")}  # pairs under the threshold both stay
    assert fuzzy["extra"]["verified_pairs"] <= fuzzy["extra"]["candidate_pairs"]
    assert all(size >= 2 for size in fuzzy["extra"]["cluster_sizes"])


def test_lsh_settings_that_cannot_reach_the_threshold_are_refused(tmp_path, capsys):
    assert candidate_probability(0.8, 20, 6) > 0.99
    with pytest.raises(ValueError, match="bands 16 x rows 7 = 112, not permutations 128"):
        check_config({"permutations": 128, "bands": 16, "rows": 7})
    with pytest.raises(ValueError, match="cannot reach the threshold"):
        check_config({"permutations": 128, "bands": 2, "rows": 64})
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "s.jsonl").write_text('{"text": "a b c"}\n')
    code = megazoo(["curate", "fuzzy-dedup", "--input", str(raw), "--output", str(tmp_path / "o"),
                    "--permutations", "128", "--bands", "16", "--rows", "7"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "set bands x rows = permutations" in err


def test_cut_removes_200_characters_each_side_and_drops_short_pieces():
    text = "x" * 1000
    assert [len(p) for p in split(text, 500, 20, 200, "none")] == [300, 280]
    docs = [{"id": "d", "text": " ".join(f"w{i}" for i in range(400))}]
    index = build_index({"bench": [" ".join(f"w{i}" for i in range(150, 163))]}, 13, 13)
    cfg = {**PRESETS["gpt3"]}
    kept, gone, extra = decontaminate_shard(docs, {"text_key": "text", "index": index, "config": cfg})
    assert [d["id"] for d in kept] == ["d#0", "d#1"] and extra["documents_hit"] == {"bench": 1}
    assert all("w156" not in d["text"].split() for d in kept)
    assert 'bench: "w150 w151' in gone[0]["reason"]
    many = {"bench": [" ".join(f"w{i}" for i in range(s, s + 13)) for s in range(0, 400, 30)]}
    kept, gone, _ = decontaminate_shard(docs, {"text_key": "text", "index": build_index(many, 13, 13), "config": {
        **cfg, "margin": 10, "min_piece": 1}})
    assert kept == [] and "> 10, dropped" in gone[0]["reason"]


def test_every_planted_contamination_is_removed(planted, tmp_path):
    out, truth = planted
    tasks = [str(out / "eval" / "lambada.jsonl"), f"RACE={out / 'eval' / 'RACE'}"]
    stats = run_stage("decontaminate", {"tasks": tasks}, out / "raw", tmp_path / "d", "text", LocalExecutor(False))
    index = ngram_index(benchmark_texts(tasks))  # the 13-grams (texts of 8-12 words are whole n-grams too)
    for doc in iter_output(tmp_path / "d"):
        words = tokens(doc["text"])
        assert not any(ngram_index({"x": [" ".join(words[i:i + 13])]}).keys() & index.keys()
                       for i in range(0, max(1, len(words) - 12)))
    gone = {r["id"] for r in removed(tmp_path / "d")}
    assert {c for c, _ in truth["contaminated"]} <= gone
    hit = stats["extra"]["documents_hit"]
    assert hit.get("RACE", 0) >= 1 and hit.get("lambada", 0) >= 1


def test_suite_yaml_and_generated_tasks(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "lam.jsonl").write_text(json.dumps({"text": " ".join(f"t{i}" for i in range(20))}) + "\n")
    (tmp_path / "suite.yaml").write_text("tasks:\n  - {name: lambada, path: data/lam.jsonl}\n")
    texts = benchmark_texts([str(tmp_path / "suite.yaml"), "generated"])
    assert set(texts) == {"lambada", "hellaswag"} and len(texts["lambada"]) > 1
    with pytest.raises(ValueError, match="no such file or folder"):
        benchmark_texts([str(tmp_path / "nope.jsonl")])
