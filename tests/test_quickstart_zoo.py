"""The quickstart's leaderboard ranking. Its real-model stages (SmolLM2-135M imported at tp=2
continuing the prompt on 2 ranks exactly as transformers does; the leaderboard ranking it above the
tiny model, with its table, chart and a suite file `megazoo eval leaderboard` can rerun) are checked
on the run directory of the README's main job (tests/test_quickstart.py), which runs them anyway."""

from __future__ import annotations

from megazoo.quickstart_board import ranking


def test_ranking_orders_by_each_tasks_headline_metric():
    results = {"a": {"lambada": {"acc": 0.1, "ppl": 5.0}, "hellaswag": {"acc": 0.9, "acc_norm": 0.2}},
               "b": {"lambada": {"acc": 0.4, "ppl": 50.0}, "hellaswag": {"acc": 0.1, "acc_norm": 0.6}}}
    assert ranking(results) == {"lambada": ["b", "a"], "hellaswag": ["b", "a"]}  # acc, then acc_norm
    results["a"]["lambada"]["acc"] = 0.7
    assert ranking(results)["lambada"] == ["a", "b"]
