"""The offline dialogue sets: the WoW-format files read back with the WoW reader (at least 30 dialogues,
every generated checked sentence a sentence of the topic's passage and used by the wizard's response, the
test files the hand-made set, seen topics apart from unseen ones), multi-actor conversations whose
speakers keep one style each, and a document set holding every knowledge sentence of the grounded
conversations; the data command writes the TSVs."""

from __future__ import annotations

import json
import re

import pytest

from megazoo.cli import main as megazoo
from megazoo.eval.metrics import unigram_prf
from megazoo.tasks.dialogue.data import read_conversations, read_tsv, read_wow
from megazoo.tasks.dialogue.generate import STYLES
from megazoo.tasks.dialogue.handmade import load_handmade, split_handmade


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    out = tmp_path_factory.mktemp("dialogue")
    assert megazoo(["task", "dialogue", "data", str(out), "--seed", "3"]) == 0
    return out


def test_wow_set_has_checked_sentences_from_the_passages(out):
    total, topics = 0, {}
    for name in ("train", "valid_random_split", "valid_topic_split", "test_random_split", "test_topic_split"):
        dialogues = json.loads((out / "wow" / f"{name}.json").read_text())
        total += len(dialogues)
        topics[name] = {d["chosen_topic"] for d in dialogues}
        samples = read_wow(out / "wow" / f"{name}.json")
        assert [s.tsv() for s in samples] == [s.tsv() for s in read_tsv(out / "wow" / f"{name}.tsv")]
        if name.startswith("test"):  # the hand-made set by default (test_dialogue_handmade.py checks it)
            assert dialogues == split_handmade(load_handmade())[name]
            continue
        for d in dialogues:
            for turn in d["dialog"]:
                for sentence in turn["checked_sentence"].values():
                    assert sentence in d["chosen_topic_passage"]
        grounded = [s for s in samples if s.knowledge != "no_passages_used"]
        assert grounded and all(unigram_prf(s.response, s.knowledge)[1] == 1.0 for s in grounded)
    assert total >= 30
    assert topics["test_random_split"] <= topics["train"]
    assert not topics["test_topic_split"] & topics["train"]


def test_every_speaker_keeps_one_style(out):
    convs = read_conversations(out / "actors" / "train.jsonl") + read_conversations(out / "actors" / "valid.jsonl")
    seen = set()
    for c in convs:
        assert len({t.speaker for t in c.turns}) == 2
        for t in c.turns:
            opening, closing = STYLES[t.speaker].split("{")[0], STYLES[t.speaker].split("}")[-1]
            assert t.text.startswith(opening) and t.text.endswith(closing)
            seen.add(t.speaker)
    assert seen == set(STYLES)


def test_documents_hold_the_knowledge_of_the_grounded_conversations(out):
    sentences = {s for f in (out / "documents").glob("*.txt") for s in f.read_text().splitlines()}
    train = read_conversations(out / "knowledge" / "train.jsonl")
    valid = read_conversations(out / "knowledge" / "valid.jsonl")
    assert all(k in sentences for c in train + valid for k in c.knowledge)
    assert not {c.topic for c in train} & {c.topic for c in valid}  # answers of valid topics are only in documents
    assert all(re.search(c.topic.lower(), c.turns[0].text.lower()) for c in valid)


def test_facts_do_not_depend_on_the_hash_seed():
    import os
    import subprocess
    import sys

    from megazoo.tasks.dialogue.facts import load_topics, topic_facts

    code = ("import json; from megazoo.tasks.dialogue.facts import load_topics, topic_facts; "
            "print(json.dumps([topic_facts(t) for t in load_topics()]))")
    here = [topic_facts(t) for t in load_topics()]
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": seed}).stdout
        assert json.loads(out) == here
