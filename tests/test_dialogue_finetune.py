"""Dialogue fine-tuning pairs and the train / perplexity / sample stages on a tiny GPT: the persona
reference holds the target speaker's turns from other conversations only, speakers are anonymous
letters; BM25 knowledge finds the document sentence a question asks for; a `task: dialogue` recipe
trains through the core trainer (loss on responses), and the trained checkpoint gives perplexities with
and without the reference and greedy responses that evaluate reads; bad recipes fail in one line."""

from __future__ import annotations

import json
import math

import pytest
import yaml

from megazoo.cli import main as megazoo
from megazoo.tasks.dialogue import prompts
from megazoo.tasks.dialogue.data import Conversation, Turn, read_any
from megazoo.tasks.dialogue.generate import generate_actors, generate_knowledge
from megazoo.tasks.dialogue.knowledge import DocumentSet
from tests.evaluation_shape import check_evaluation
from tests.train_cases import metrics, one_thread


@pytest.fixture(autouse=True)
def single_thread():
    with one_thread():
        yield


def conv(cid, *turns):
    return Conversation(cid, [Turn(s, t) for s, t in turns])


def test_actor_pairs_take_references_from_other_conversations_only():
    train = [conv("c1", ("ann", "Arr one"), ("bob", "Ugh one")), conv("c2", ("bob", "Ugh two"), ("ann", "Arr two")),
             conv("c3", ("ann", "Arr three"), ("cy", "Hi three"))]
    pool = prompts.speaker_turns(train)
    pairs = prompts.actor_pairs(train[:1], pool, k=5)
    assert len(pairs) == 1 and pairs[0].response == " Ugh one"
    assert pairs[0].prompt == "Earlier turns of this speaker:\n- Ugh two\nConversation:\nA: Arr one\nB:"
    ann = prompts.actor_pairs([conv("c9", ("bob", "x"), ("ann", "y"))], pool, k=2, seed=1)[0].prompt
    assert len(set(ann.split("\n")[1:3])) == 2  # two distinct turns of ann
    assert all(line[2:] in {"Arr one", "Arr two", "Arr three"} for line in ann.split("\n")[1:3])
    assert prompts.actor_pairs(train[:1], pool, k=5, reference=False)[0].prompt == "Conversation:\nA: Arr one\nB:"


def test_bm25_knowledge_finds_the_sentence_asked_for(tmp_path):
    counts = generate_knowledge(tmp_path, seed=0)
    docs = DocumentSet(tmp_path / "documents")
    convs = read_any(tmp_path / "knowledge" / "valid.jsonl")
    assert counts["valid"] == len(convs)
    found = docs.retrieve([s.turns[-1] for s in convs], 2)
    hits = sum(s.knowledge in f for s, f in zip(convs, found))
    assert hits / len(convs) > 0.6  # the question names its topic and the kind of fact
    pair = prompts.knowledge_pairs([conv("k", ("user", "What kind of thing is a penguin?"), ("bot", "A bird."))],
                                   docs, 1)[0]
    assert pair.prompt == ("Knowledge: A penguin is a kind of sphenisciform seabird.\n"
                           "Conversation:\nA: What kind of thing is a penguin?\nB:")


def recipe(tmp_path, data, **task) -> str:
    cfg = {"name": "dialogue-test", "task": {"name": "dialogue", **task},
           "model": {"arch": "gpt", "num_layers": 2, "hidden_size": 32, "num_heads": 4, "vocab_size": 50304,
                     "seq_length": 256, "dropout": 0.0, "attention_dropout": 0.0},
           "data": {"path": str(data), "tokenizer": "gpt2"},
           "train": {"steps": 4, "micro_batch": 4, "global_batch": 4, "lr": 1e-3, "min_lr": 1e-4, "warmup": 1,
                     "eval_interval": 4, "eval_iters": 1, "log_interval": 1},
           "log": {"dir": str(tmp_path / "run"), "progress": False, "plot": False},
           "checkpoint": {"interval": 0, "keep": 1, "resume": "none"}, "precision": {"dtype": "fp32"}}
    path = tmp_path / "dialogue.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_actor_finetune_then_perplexity_and_responses(tmp_path, capsys):
    data = tmp_path / "actors"
    generate_actors(data, seed=0, conversations=24, valid=4)
    assert megazoo(["task", "dialogue", "train", recipe(tmp_path, data, kind="actor", reference_turns=2)]) == 0
    lines = metrics(tmp_path / "run")
    assert [r for r in lines if r.get("split") == "valid"] and lines[0]["loss"] > lines[3]["loss"] - 5
    ckpt = tmp_path / "run" / "checkpoints"
    common = ["--data", str(data / "valid.jsonl"), "--checkpoint", str(ckpt), "--kind", "actor",
              "--references", str(data / "train.jsonl"), "--reference-turns", "2"]
    figures = {}
    for name, extra in (("with", []), ("without", ["--without"])):
        out = tmp_path / f"ppl-{name}.json"
        assert megazoo(["task", "dialogue", "perplexity", *common, *extra, "--out", str(out)]) == 0
        figures[name] = json.loads(out.read_text())
    n = sum(len(json.loads(x)["turns"]) - 1 for x in (data / "valid.jsonl").read_text().splitlines())
    assert figures["with"]["task"] == "dialogue" and figures["with"]["n"] == figures["without"]["n"] == n
    assert figures["with"]["tokens"] == figures["without"]["tokens"]  # the same responses scored
    with_, without = figures["with"]["metrics"], figures["without"]["metrics"]
    assert with_["perplexity"] != without["perplexity"] and with_["perplexity"] == pytest.approx(math.exp(with_["nll"]))
    responses = tmp_path / "responses.jsonl"
    assert megazoo(["task", "dialogue", "sample", *common, "--out", str(responses), "--max-new-tokens", "4"]) == 0
    assert megazoo(["task", "dialogue", "evaluate", "--data", str(data / "valid.jsonl"), "--generations",
                    str(responses), "--out", str(tmp_path / "eval.json")]) == 0
    assert check_evaluation(tmp_path / "eval.json", "dialogue")["n"] == n


def test_bad_recipes_fail_in_one_line(tmp_path, capsys):
    data = tmp_path / "actors"
    generate_actors(data, seed=0, conversations=6, valid=2)
    assert megazoo(["task", "dialogue", "train", recipe(tmp_path, data, kindd="actor")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "task.kindd" in err and "task.kind" in err.replace("task.kindd", "")
    assert megazoo(["task", "dialogue", "finetune", recipe(tmp_path, data, kind="knowledge")]) == 2  # old name
    err = capsys.readouterr().err
    assert "needs task.documents" in err and "`finetune` is now `train`" in err
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "train.jsonl").write_text('{"id": "x", "turns": [{"speaker": "a"}]}\n')
    (bad / "valid.jsonl").write_text('{"id": "y", "turns": [{"speaker": "a", "text": "hi"}]}\n')
    assert megazoo(["task", "dialogue", "train", recipe(tmp_path, bad, kind="actor")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(f'{bad / "train.jsonl"}:1: turn 1 has no "text"') and len(err.splitlines()) == 1
