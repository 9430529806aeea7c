"""The leaderboard runner: suite validation, results.json / results.md / PNG, regression flags."""

import json

import pytest
import yaml

from megazoo.eval.leaderboard import SuiteError, compare, load_suite, markdown, run_leaderboard


def _tiny_hf_gpt2(path, seed):
    """A random 2-layer GPT-2 with the real GPT-2 tokenizer files, as a transformers folder."""
    import shutil

    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from megazoo.core.data.tokenizers import _gpt2_dir

    torch.manual_seed(seed)
    cfg = GPT2Config(n_layer=2, n_embd=32, n_head=2, n_positions=128, vocab_size=50257)
    GPT2LMHeadModel(cfg).save_pretrained(path)
    for name in ("vocab.json", "merges.txt"):
        shutil.copy(_gpt2_dir() / name, path / name)
    return path


def test_compare_flags_drops_beyond_tolerance():
    old = {"m": {"lambada": {"acc": 0.50, "ppl": 10.0}, "piqa": {"acc": 0.70}}}
    new = {"m": {"lambada": {"acc": 0.45, "ppl": 10.05}, "piqa": {"acc": 0.695}}}
    flags = compare(new, old, tolerance=0.01)
    assert [(r["task"], r["metric"]) for r in flags] == [("lambada", "acc")]
    worse_ppl = {"m": {"lambada": {"acc": 0.5, "ppl": 12.0}}}
    assert [(r["metric"]) for r in compare(worse_ppl, old, 0.01)] == ["ppl"]  # perplexity: lower is better


def test_markdown_table_lists_headline_metrics():
    table = markdown({"a": {"lambada": {"acc": 0.25}, "wikitext103_megatron": {"adjusted_ppl": 31.5}}})
    assert "| model | lambada (acc) | wikitext103_megatron (adjusted_ppl) |" in table
    assert "| a | 0.2500 | 31.5000 |" in table


def test_bad_suites_are_named(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump({"models": [], "tasks": [{"name": "lambada", "path": "x"}]}))
    with pytest.raises(SuiteError, match=r"s.yaml: `models` must be a non-empty list"):
        load_suite(p)
    p.write_text(yaml.safe_dump({"models": [{"name": "m"}], "tasks": [{"name": "lambada", "path": "x"}]}))
    with pytest.raises(SuiteError, match=r"models\[0\] needs `name` and one of `checkpoint` or `hf`"):
        load_suite(p)
    with pytest.raises(SuiteError, match="no such suite file"):
        load_suite(tmp_path / "missing.yaml")


def test_leaderboard_end_to_end(tmp_path):
    from megazoo.eval.corpus_tasks import corpus_task_files

    files = corpus_task_files(tmp_path / "data", n=6)
    for name, seed in (("a", 0), ("b", 1)):
        _tiny_hf_gpt2(tmp_path / name, seed)
    suite = {"name": "smoke", "out": "board",
             "models": [{"name": "a", "hf": "a"}, {"name": "b", "hf": "b"}],
             "tasks": [{"name": "lambada", "path": str(files["lambada"])},
                       {"name": "hellaswag", "path": str(files["hellaswag"])}]}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    report = run_leaderboard(tmp_path / "suite.yaml", progress=False)
    out = tmp_path / "board"
    saved = json.loads((out / "results.json").read_text())
    assert saved["results"] == json.loads(json.dumps(report["results"]))
    assert set(saved["results"]) == {"a", "b"} and set(saved["results"]["a"]) == {"lambada", "hellaswag"}
    assert 0.0 <= saved["results"]["a"]["hellaswag"]["acc"] <= 1.0
    assert (out / "results.png").stat().st_size > 1000 and "| a |" in (out / "results.md").read_text()
    # a baseline that was better is flagged on the next run
    better = json.loads(json.dumps(saved))
    better["results"]["a"]["hellaswag"]["acc"] = saved["results"]["a"]["hellaswag"]["acc"] + 0.5
    (tmp_path / "old.json").write_text(json.dumps(better))
    suite["baseline"] = "old.json"
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    with pytest.raises(ValueError, match="exists and is not empty; choose another path or pass --overwrite"):
        run_leaderboard(tmp_path / "suite.yaml", progress=False)  # the first run's results are kept
    again = run_leaderboard(tmp_path / "suite.yaml", progress=False, overwrite=True)
    assert any(r["model"] == "a" and r["task"] == "hellaswag" and r["metric"] == "acc" for r in again["regressions"])
