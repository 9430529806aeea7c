"""Actor and user conditioning in dialogue (issue 40, point 2): the actor's reference is k whole
previous conversations (other threads only; single turns stay an option); the local-knowledge input
holds the user's history (other threads) and the best sentences of the documents linked before the
turn, each block optional; the link index's bad lines are one error each; the settings are checked
and recorded in the perplexity and sample outputs of a tiny model trained on a Reddit-style dump."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from megazoo.cli import main as megazoo
from megazoo.core.train.errors import ConfigError
from megazoo.eval.readers.common import LineError, MissingFile
from megazoo.tasks.dialogue import prompts
from megazoo.tasks.dialogue.builder import DialogueTask, build_pairs
from megazoo.tasks.dialogue.data import Conversation, Turn, read_conversations
from megazoo.tasks.dialogue.links import LinkedDocuments
from tests.train_cases import one_thread

FIXTURE = Path(__file__).parent / "fixtures" / "dialogue" / "reddit.jsonl"
OWL = ["An owl is a bird of prey.", "Owls hunt at night.", "Barn owls nest in barns."]


@pytest.fixture(autouse=True)
def single_thread():
    with one_thread():
        yield


def conv(cid, *turns, thread=""):
    return Conversation(cid, [Turn(s, t) for s, t in turns], thread=thread)


def whole(c, speaker, label):
    return "".join(f"{label if t.speaker == speaker else 'other'}: {t.text}\n" for t in c.turns)


def test_actor_prompt_holds_k_whole_reference_dialogues():
    train = [conv("c1", ("ann", "a1"), ("bob", "b1"), ("ann", "a2"), ("bob", "b2")),
             conv("c2", ("bob", "b3"), ("cy", "c1"), ("bob", "b4")), conv("c3", ("dee", "d1"), ("bob", "b5")),
             conv("c4", ("ann", "a3"), ("cy", "c2")), conv("c5", ("bob", "same thread"), thread="t9")]
    target = conv("c9", ("ann", "hi"), ("bob", "yo"), thread="t9")
    pool = prompts.speaker_conversations(train)
    blocks = {c.id: whole(c, "bob", "B") for c in train[:3]}
    for seed in range(5):
        pair = prompts.actor_pairs([target], pool, 2, seed, unit="conversation")[0]
        head, context = pair.prompt.split("Conversation:\nA: hi\nB:")
        assert context == "" and pair.response == " yo"
        parts = head.split("Conversation ")
        assert parts[0] == "Earlier conversations of B:\n" and [p[:3] for p in parts[1:]] == ["1:\n", "2:\n"]
        chosen = [p[3:] for p in parts[1:]]
        assert len(set(chosen)) == 2 and all(b in blocks.values() for b in chosen)  # whole, all turns, in order
        order = list(blocks.values())
        assert order.index(chosen[0]) < order.index(chosen[1])  # kept in the pool's order
    every = prompts.actor_pairs([target], pool, 9, unit="conversation")[0].prompt
    assert every.count("\nConversation ") == 3 and "same thread" not in every  # never the thread answered
    single = prompts.actor_pairs([target], prompts.speaker_turns(train), 2, unit="turn")[0].prompt
    assert single.startswith("Earlier turns of this speaker:\n- b") and single.count("\n- ") == 2


def test_reddit_actor_references_are_other_threads_whole():
    convs = read_conversations(FIXTURE)
    pairs = build_pairs(DialogueTask(kind="actor", reference_conversations=5), convs, convs)
    by = {(p.line, p.response.strip()): p.prompt for p in pairs}
    prompt = by[(9, "Same here, with milk.")]  # ann answers in thread s2: her conversations of thread s1
    s1 = [c for c in convs if c.thread == "t3_s1"]
    assert prompt.startswith("Earlier conversations of C:\nConversation 1:\n" + whole(s1[0], "ann", "C")
                             + "Conversation 2:\n" + whole(s1[1], "ann", "C") + "Conversation:\n")
    assert "Agreed." not in prompt  # her conversation of the same thread is not a reference
    deleted = by[(9, "Black, always.")]  # a deleted account's turn: no actor, no reference
    assert deleted.startswith("Conversation:\nA: Green or black tea?")


@pytest.fixture
def links(tmp_path):
    folder = tmp_path / "links"
    folder.mkdir()
    (folder / "owl.txt").write_text("\n".join(OWL) + "\n")
    rows = [{"url": "https://en.wikipedia.org/wiki/Owl", "file": "owl.txt"},
            {"url": "https://example.org/tea", "text": "Black tea is fully oxidised. Green tea is not."},
            {"url": "https://www.audubon.org/barn-owl", "text": "AUDUBON PAGE."}]
    (folder / "urls.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_user_history_and_linked_document_in_the_local_knowledge_input(links):
    convs = read_conversations(FIXTURE)
    docs, pool = LinkedDocuments(links), prompts.speaker_turns(convs)
    pairs = prompts.knowledge_pairs(convs, None, 2, links=docs, link_sentences=3, history_pool=pool, history_turns=2)
    by = {(p.line, p.response.strip()): p.prompt for p in pairs}
    bob = by[(4, "Do they really? I thought they slept all night.")]  # bob answers ann, who linked the owl page
    assert bob == ("History of this user:\n- Same here, with milk.\n- Agreed.\n"  # ann's turns in thread s2
                   f"Linked documents: {' '.join(OWL)}\n"
                   "Conversation:\nA: Owls hunt at night, see https://en.wikipedia.org/wiki/Owl for more.\nB:")
    cy = by[(2, "Barn owls are my favourite ([link](https://www.audubon.org/barn-owl)).")]
    assert "AUDUBON" not in cy and "Linked documents: An owl" in cy  # a link in the response is not known before it
    tea = by[(9, "Black, always.")]  # #types dropped: the index's page
    assert "Linked documents: Black tea is fully oxidised. Green tea is not.\n" in tea
    assert "History of this user:\n- Owls hunt at night" not in tea  # bob's history ...
    assert "History of this user:\n- Do they really?" in tea  # ... from thread s1 only
    one = prompts.knowledge_pairs(convs, None, 2, links=docs, link_sentences=1)
    assert "Linked documents: Owls hunt at night.\n" in one[0].prompt  # the best sentence for the last turns
    assert "History" not in one[0].prompt
    responder = prompts.knowledge_pairs(convs[:1], None, 2, history_pool=pool, history_turns=1, history_of="responder")
    assert responder[0].prompt.startswith("History of the one answering:\n- Green or black tea?")
    assert prompts.knowledge_pairs(convs, None, 2, False, docs, 2, pool, 2)[0].prompt.startswith("Conversation:")
    assert docs.missing == set() and "https://EN.wikipedia.org/wiki/Owl/#x" in docs
    assert docs.document("https://nowhere.example/") == [] and docs.missing == {"https://nowhere.example/"}


@pytest.mark.parametrize("row, problem", [
    ({"url": "https://a.org", "file": "gone.txt"}, "\"file\" 'gone.txt': no such file in"),
    ({"url": "ftp://a.org", "text": "x"}, '"url" must be an http(s) URL'),
    ({"url": "https://a.org"}, 'give "file" (a text file beside the index) or "text"'),
])
def test_link_index_errors_name_file_and_line(tmp_path, row, problem):
    index = tmp_path / "urls.jsonl"
    index.write_text(json.dumps({"url": "https://ok.org", "text": "fine"}) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(LineError) as e:
        LinkedDocuments(tmp_path)
    assert str(e.value).startswith(f"{index}:2: ") and problem in str(e.value)
    with pytest.raises(MissingFile, match="expected a folder with urls.jsonl"):
        LinkedDocuments(tmp_path / "none")


def test_settings_checks():
    assert DialogueTask.from_dict({"kind": "knowledge", "links": "L"}).links == "L"
    assert DialogueTask.from_dict({"kind": "knowledge", "user_history": 2}).user_history == 2
    with pytest.raises(ConfigError, match="needs task.documents.*task.links.*task.user_history"):
        DialogueTask.from_dict({"kind": "knowledge"})
    with pytest.raises(ConfigError, match="task.reference_unit must be one of conversation, turn"):
        DialogueTask.from_dict({"reference_unit": "turns"})
    with pytest.raises(ConfigError, match="task.reference_conversations must be >= 1"):
        DialogueTask.from_dict({"reference_conversations": 0})


def recipe(tmp_path, data, **task) -> str:
    cfg = {"name": "conditioning-test", "task": {"name": "dialogue", "valid_fraction": 0.5, **task},
           "model": {"arch": "gpt", "num_layers": 1, "hidden_size": 32, "num_heads": 4, "vocab_size": 50304,
                     "seq_length": 256, "dropout": 0.0, "attention_dropout": 0.0},
           "data": {"path": str(data), "tokenizer": "gpt2"},
           "train": {"steps": 2, "micro_batch": 2, "global_batch": 2, "lr": 1e-3, "min_lr": 1e-4, "warmup": 1,
                     "eval_interval": 2, "eval_iters": 1, "log_interval": 1},
           "log": {"dir": str(tmp_path / "run"), "progress": False, "plot": False},
           "checkpoint": {"interval": 0, "keep": 1, "resume": "none"}, "precision": {"dtype": "fp32"}}
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_trained_on_a_dump_and_the_choices_recorded(tmp_path, links, capsys):
    data = tmp_path / "dump.jsonl"
    shutil.copy(FIXTURE, data)
    assert megazoo(["task", "dialogue", "train", recipe(tmp_path, data, kind="knowledge", links=str(links),
                                                        user_history=2)]) == 0
    ckpt = tmp_path / "run" / "checkpoints"
    common = ["--data", str(data), "--checkpoint", str(ckpt), "--references", str(data)]
    out = tmp_path / "ppl.json"
    assert megazoo(["task", "dialogue", "perplexity", *common, "--kind", "knowledge", "--links", str(links),
                    "--user-history", "2", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["conditioning"] == {"documents": None, "links": {"path": str(links), "sentences": 2},
                                      "user_history": {"turns": 2, "of": "user"}}
    assert record["n"] == 6  # every turn after the first of the four conversations
    out = tmp_path / "ppl-actor.json"
    assert megazoo(["task", "dialogue", "perplexity", *common, "--kind", "actor", "--reference-unit", "turn",
                    "--out", str(out)]) == 0
    assert json.loads(out.read_text())["conditioning"] == {"reference": {"unit": "turn", "turns": 3}}
    resp = tmp_path / "resp.jsonl"
    assert megazoo(["task", "dialogue", "sample", *common, "--kind", "actor", "--out", str(resp),
                    "--max-new-tokens", "2"]) == 0
    assert json.loads(resp.with_suffix(".conditioning.json").read_text())["conditioning"] == {
        "reference": {"unit": "conversation", "conversations": 2}}
    assert megazoo(["task", "dialogue", "sample", *common, "--kind", "knowledge", "--out", str(resp),
                    "--overwrite"]) == 2
    assert "--kind knowledge needs --documents DIR, --links PATH or --user-history N" in capsys.readouterr().err
