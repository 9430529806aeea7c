"""The leaderboard's outputs: the printed table, lm-eval-layout results files with standard errors,
versions and model metadata, the CSV, the 0-1 scale and the bar chart."""

import csv
import glob
import json
import math

import yaml

from megazoo.eval.leaderboard_outputs import binomial_stderr, stderr, table, to_unit_scale


def read_like_lm_eval(output_path):
    """How scripts written for lm-eval's `--output_path` read it: every results_*.json below it,
    `results[task]["<metric>,none"]` / `"<metric>_stderr,none"`, `n-shot`, `versions`, `config`."""
    rows = []
    for path in sorted(glob.glob(f"{output_path}/**/results_*.json", recursive=True)):
        data = json.load(open(path))
        model = data["config"]["model_args"]
        for task, metrics in data["results"].items():
            for key, value in metrics.items():
                if "," not in key or "_stderr" in key:
                    continue
                metric, filt = key.split(",")
                rows.append({"model": model, "name": data["model_name"], "task": task, "metric": metric,
                             "value": value, "stderr": metrics[f"{metric}_stderr,{filt}"],
                             "n_shot": data["n-shot"][task], "version": data["versions"][task],
                             "num_fewshot": data["configs"][task]["num_fewshot"]})
    return rows


def test_binomial_stderr_matches_the_formula_on_a_hand_example():
    # 3 right of 4: p = 0.75, sqrt(0.75 * 0.25 / 3) = 0.25
    assert math.isclose(binomial_stderr(0.75, 4), 0.25)
    assert math.isclose(stderr("acc", 0.75, 4), 0.25)
    # lm-eval's mean_stderr: the sample standard deviation of the 0/1 scores over sqrt(n)
    scores = [1, 1, 0, 1, 0]
    mu = sum(scores) / 5
    sample_sd = math.sqrt(sum((x - mu) ** 2 for x in scores) / 4)
    assert math.isclose(stderr("acc_norm", mu, 5), sample_sd / math.sqrt(5))
    assert stderr("ppl", 12.0, 5) == "N/A" and stderr("f1", 0.5, 5) == "N/A"


def test_percentages_become_fractions_and_other_units_stay():
    assert to_unit_scale({"accuracy": 62.5, "f1": 0.4, "ppl": 31.0, "n": 40}) == \
        {"accuracy": 0.625, "f1": 0.4, "ppl": 31.0, "n": 40}


def test_table_has_headlines_and_an_average_of_the_proportions():
    from megazoo.eval.leaderboard import headline

    text = table({"a": {"lambada": {"acc": 0.25}, "hellaswag": {"acc_norm": 0.75, "acc": 0.5},
                        "wikitext103_megatron": {"adjusted_ppl": 31.5}}}, headline)
    head, _, row = text.splitlines()
    assert head.split() == ["model", "hellaswag", "(acc_norm)", "lambada", "(acc)", "wikitext103_megatron",
                            "(adjusted_ppl)", "avg", "(0-1", "headlines)"]
    assert row.split() == ["a", "0.7500", "0.2500", "31.5000", "0.5000"]  # the perplexity is not averaged


def test_leaderboard_writes_lm_eval_results_csv_and_chart(tmp_path, capsys):
    from megazoo.cli import main
    from megazoo.eval.corpus_tasks import corpus_task_files
    from tests.test_eval_leaderboard import _tiny_hf_gpt2

    files = corpus_task_files(tmp_path / "data", n=6)
    _tiny_hf_gpt2(tmp_path / "a", 0)
    suite = {"name": "smoke", "out": "board", "models": [{"name": "a", "hf": "a"}],
             "tasks": [{"name": "lambada", "path": str(files["lambada"])},
                       {"name": "hellaswag", "path": str(files["hellaswag"])}]}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    assert main(["eval", "leaderboard", str(tmp_path / "suite.yaml")]) == 0
    printed = capsys.readouterr().out
    assert printed.splitlines()[0].split()[:5] == ["model", "hellaswag", "(acc_norm)", "lambada", "(acc)"]
    assert not printed.lstrip().startswith("{")  # the table, not JSON
    out = tmp_path / "board"
    saved = json.loads((out / "results.json").read_text())

    rows = read_like_lm_eval(out)
    assert {(r["task"], r["metric"]) for r in rows} >= {("lambada", "acc"), ("hellaswag", "acc"),
                                                        ("hellaswag", "acc_norm")}
    for r in rows:
        assert r["name"] == "a" and r["model"] == f"pretrained={tmp_path / 'a'}"
        assert r["n_shot"] == 0 == r["num_fewshot"] and r["version"] == 1
        assert r["value"] == saved["results"]["a"][r["task"]][r["metric"]]
        if not r["metric"].startswith("acc"):  # lambada's perplexity: its own unit, no stderr computed
            assert r["stderr"] == "N/A" and r["metric"] == "ppl"
            continue
        assert 0.0 <= r["value"] <= 1.0  # accuracies: 0-1
        n = saved["results"]["a"][r["task"]]["n"]
        assert math.isclose(r["stderr"], math.sqrt(r["value"] * (1 - r["value"]) / (n - 1)))
    data = json.loads(next(out.glob("lm_eval/a/results_smoke.json")).read_text())
    from megazoo import __version__

    assert data["megazoo_version"] == __version__ == saved["megazoo_version"]
    assert data["config"]["arch"] == "gpt2" and data["config"]["model_num_parameters"] > 1000
    assert data["config"]["checkpoint"] == str(tmp_path / "a")

    with open(out / "results.csv") as f:
        csv_rows = list(csv.DictReader(f))
    assert {(r["model"], r["task"], r["metric"]) for r in csv_rows} >= {("a", "lambada", "acc"), ("a", "hellaswag", "acc_norm")}
    assert all(0.0 <= float(r["value"]) <= 1.0 for r in csv_rows if r["metric"].startswith("acc"))
    assert [r["metric"] for r in csv_rows if r["task"] == "hellaswag" and r["headline"] == "1"] == ["acc_norm"]
    assert (out / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| avg |" in (out / "results.md").read_text()
