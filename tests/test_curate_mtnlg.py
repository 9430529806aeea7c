"""megazoo curate for MT-NLG (issue #39), the parts tests/test_curate_rules.py does not run: the
decontamination n-gram size per benchmark, the new fuzzy-dedup settings on a local Dask cluster
against the in-process path, and `curate blend --preset mt-nlg` end to end on tiny shards."""

import json
import random

import pytest

from megazoo.cli import main as megazoo
from megazoo.core.data.blend import parse_data_path
from megazoo.curate import mt_nlg
from megazoo.curate.executor import DaskExecutor, LocalExecutor
from megazoo.curate.pipeline import run_stage
from megazoo.curate.shards import iter_output

SHORT = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec "
         "romeo sierra tango")  # 20 words
OTHER = ("red orange yellow green blue indigo violet black white grey brown pink cyan magenta olive navy maroon "
         "teal coral amber")  # 20 words


def filler(k: int) -> str:
    """A 50-character sentence (its `.` at offset 48, then a space)."""
    return f"Filler sentence number {k:03d} holds plain words abc. "


def rows(folder):
    return {d["id"]: d["text"] for d in iter_output(folder)}


def removed(folder):
    return sorted((json.loads(line) for p in sorted((folder / "_removed").rglob("*.jsonl"))
                   for line in p.read_text().splitlines()), key=lambda r: r["id"])


# ---- decontamination: an n-gram size per benchmark ---------------------------------------------------

@pytest.fixture(scope="module")
def leaks(tmp_path_factory):
    root = tmp_path_factory.mktemp("leaks")
    (root / "eval").mkdir()
    (root / "eval" / "short.jsonl").write_text(json.dumps({"text": SHORT}) + "\n")
    (root / "eval" / "other.jsonl").write_text(json.dumps({"text": OTHER}) + "\n")
    before, after = "".join(filler(k) for k in range(10)), "".join(filler(k) for k in range(10, 20))
    eight = " ".join(SHORT.split()[3:11])  # "delta ... kilo": 8 words, 47 characters
    docs = [{"id": "short8", "text": before + f"Then we read {eight} and more. " + after},
            {"id": "other8", "text": before + f"Then we read {' '.join(OTHER.split()[3:11])} and more. " + after},
            {"id": "other13", "text": before + f"Then we read {' '.join(OTHER.split()[2:15])} and more. " + after},
            {"id": "clean", "text": before + after}]
    (root / "raw").mkdir()
    (root / "raw" / "s.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    return root, [str(root / "eval" / "short.jsonl"), str(root / "eval" / "other.jsonl")]


def test_a_benchmark_with_n8_catches_the_8_gram_leak_the_13_default_misses(leaks, tmp_path, capsys):
    root, tasks = leaks
    run_stage("decontaminate", {"tasks": tasks, "preset": "nvidia"}, root / "raw", tmp_path / "d13", "text",
              LocalExecutor(False))
    default = rows(tmp_path / "d13")
    assert "short8" in default and "other8" in default  # 8 words of a 20-word text: no 13-gram, not found
    assert "other13" not in default  # 13 words: found
    code = megazoo(["curate", "decontaminate", "--no-progress", "--input", str(root / "raw"), "--output",
                    str(tmp_path / "d8"), "--tasks", *tasks, "--preset", "nvidia", "--ngram-per-task", "short:8"])
    assert code == 0, capsys.readouterr().err
    out = rows(tmp_path / "d8")
    # by hand: the match starts at 500 + len("Then we read ") = 513 and is 47 characters long. Cut before at
    # 513 - 200 = 313, back to the `.` at 298 (filler 5's): piece 0 = fillers 0-5 without the last space.
    # Cut after at 513 + 47 + 200 = 760, inside filler 13 (the after part starts at 513 + 47 + 11 = 571:
    # 760 - 571 = 189 = 3 x 50 + 39), on to its `.` at 571 + 150 + 48 = 769: piece 1 = text[770:]
    assert "short8" not in out
    assert out["short8#0"] == "".join(filler(k) for k in range(6))[:-1]
    assert out["short8#1"] == " " + "".join(filler(k) for k in range(14, 20))
    assert "other8" in out and "other13" not in out and "clean" in out  # `other` keeps the default 13
    reasons = {r["id"]: r["reason"] for r in removed(tmp_path / "d8")}
    assert reasons["short8"] == ('decontaminate: 1 matches (short: "delta echo foxtrot golf hotel india juliet '
                                 'kilo"); kept 2 pieces')
    settings = json.loads((tmp_path / "d8" / "_settings.json").read_text())["settings"]
    assert settings["ngram_per_task"] == {"short": 8} and settings["ngram"] == 13
    stats = json.loads((tmp_path / "d8" / "_stage.json").read_text())
    assert stats["extra"]["eval_ngram_lengths"] == [8, 13]


def test_a_longer_size_for_one_benchmark_leaves_the_others_at_13(leaks, tmp_path):
    root, tasks = leaks
    run_stage("decontaminate", {"tasks": tasks, "preset": "nvidia", "ngram_per_task": {"other": 15}},
              root / "raw", tmp_path / "d15", "text", LocalExecutor(False))
    out = rows(tmp_path / "d15")
    assert "other13" in out  # 13 words of `other`: below its 15
    assert "short8" in out and "clean" in out


@pytest.mark.parametrize("value, message", [
    ("nosuch:8", "decontaminate.ngram_per_task: nosuch is not one of the tasks' benchmarks (other, short)"),
    ("short=8", "decontaminate.ngram_per_task: 'short=8' is not NAME:N"),
    ("short:0", "decontaminate.ngram_per_task: short: 0; N must be a whole number of words from 1 to 1000"),
    ("short:8,short:9", "decontaminate.ngram_per_task: short is given twice"),
])
def test_bad_ngram_per_task_is_one_line_before_any_work(leaks, tmp_path, capsys, value, message):
    root, tasks = leaks
    out = tmp_path / "o"
    code = megazoo(["curate", "decontaminate", "--no-progress", "--input", str(root / "raw"), "--output", str(out),
                    "--tasks", *tasks, "--ngram-per-task", value])
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and len(err.splitlines()) == 1 and not out.exists(), err


# ---- fuzzy dedup: the new settings on Dask ------------------------------------------------------------

@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    """Near copies (one word in 120 changed, some longer) across books, web and zeta, 2 shards each,
    plus unique documents; a few groups of three."""
    root = tmp_path_factory.mktemp("dask_datasets")
    rng = random.Random(11)
    vocab = [f"{a}{b}{c}" for a in "bcdfg" for b in "aeiou" for c in "klmnprst"]
    names = ("books", "web", "zeta")
    shards = {(n, s): [] for n in names for s in range(2)}
    for k in range(18):
        words = [rng.choice(vocab) for _ in range(120)]
        for copy in range(2 + (k % 4 == 0)):
            text = list(words)
            if copy:
                text[rng.randrange(120)] = f"changed{copy}"
            doc = {"id": f"g{k:02d}-{copy}", "text": " ".join(text) + " more" * rng.randint(0, 3)}
            shards[(names[(k + copy) % 3], rng.randrange(2))].append(doc)
    for k in range(12):
        shards[(names[k % 3], k % 2)].append({"id": f"u{k:02d}", "text": " ".join(rng.choice(vocab) for _ in range(90))})
    for (name, s), docs in shards.items():
        (root / "raw" / name).mkdir(parents=True, exist_ok=True)
        (root / "raw" / name / f"s{s}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    return root


SETTINGS = {
    "nvidia-priority": {"preset": "nvidia", "keep": "priority", "priority": ["web", "zeta"]},
    "char5-longest": {"shingle": "char", "shingle_size": 5, "permutations": 64, "bands": 16,
                      "candidate_threshold": 0.6, "threshold": 0.8, "keep": "longest"},
}


@pytest.mark.timeout(300)
def test_new_fuzzy_settings_on_dask_keep_the_same_survivors(datasets, tmp_path):
    local = {}
    for name, cfg in SETTINGS.items():
        local[name] = run_stage("fuzzy-dedup", dict(cfg), datasets / "raw", tmp_path / f"local-{name}", "text",
                                LocalExecutor(False))
    executor = DaskExecutor(workers=2, progress=False)
    try:
        assert executor.workers == 2
        remote = {name: run_stage("fuzzy-dedup", dict(cfg), datasets / "raw", tmp_path / f"dask-{name}", "text",
                                  executor) for name, cfg in SETTINGS.items()}
    finally:
        executor.close()
    for name in SETTINGS:
        a, b = tmp_path / f"local-{name}", tmp_path / f"dask-{name}"
        assert rows(a) == rows(b), name
        assert removed(a) == removed(b), name
        assert local[name]["removed"] == remote[name]["removed"] >= 18, name  # every planted copy found
    # the priority policy kept the web, then zeta copy of each group
    kept = rows(tmp_path / "dask-nvidia-priority")
    by_group: dict[str, list[str]] = {}
    for path in sorted((datasets / "raw").rglob("*.jsonl")):
        for line in path.read_text().splitlines():
            doc = json.loads(line)
            if doc["id"].startswith("g"):
                by_group.setdefault(doc["id"][:3], []).append((path.parent.name, doc["id"]))
    rank = {"web": 0, "zeta": 1, "books": 2}
    for group, members in by_group.items():
        best = min(members, key=lambda m: rank[m[0]])
        assert [i for _, i in members if i in kept] == [best[1]], group


# ---- the MT-NLG blend end to end -------------------------------------------------------------------

def test_blend_preset_mt_nlg_end_to_end(tmp_path, capsys):
    rng = random.Random(5)
    words = "the of and a to in is was for on that with as by at from his her it an".split()
    raw = tmp_path / "raw"
    for source in ("books", "web", "cc", "wiki", "news"):
        (raw / source).mkdir(parents=True)
        (raw / source / "s.jsonl").write_text("".join(
            json.dumps({"text": " ".join(rng.choice(words) for _ in range(30))}) + "\n" for _ in range(5)))
    mapping = {"Books3": "books", "BookCorpus2": "books", "Gutenberg (PG-19)": "books", "OpenWebText2": "web",
               "Pile-CC": "cc", "CC-2020-50": "cc", "CC-2021-04": "cc", "Wikipedia": "wiki", "RealNews": "news"}
    out = tmp_path / "blend"
    code = megazoo(["curate", "blend", "--no-progress", "--input", str(raw), "--output", str(out), "--preset", "mt-nlg",
                    "--map", *(f"{k}={v}" for k, v in mapping.items())])
    assert code == 0, capsys.readouterr().err
    blend = json.loads((out / "blend.json").read_text())
    table = mt_nlg.MT_NLG_TABLE
    paper = {s: sum(table[d][1] for d, t in mapping.items() if t == s) for s in set(mapping.values())}
    total = sum(paper.values())  # 14.3 + 1.0 + 0.9 + 19.3 + 9.4 + 13.0 + 15.7 + 4.8 + 9.0 = 87.4
    assert total == pytest.approx(87.4)
    prefixes, weights = parse_data_path((out / "data_path.txt").read_text().strip())
    assert [p.rsplit("/", 1)[-1] for p in prefixes] == ["books", "cc", "news", "web", "wiki"]
    assert all(p.startswith(str(out)) for p in prefixes)
    assert weights == pytest.approx([paper[s] / total for s in ("books", "cc", "news", "web", "wiki")], rel=1e-5)
    assert blend["preset"] == "mt-nlg" and blend["map"] == mapping
    for source in paper:
        assert blend["sources"][source]["tokens"] > 0 and (out / f"{source}.bin").stat().st_size > 0
    assert blend["data_path"] == (out / "data_path.txt").read_text().strip()
